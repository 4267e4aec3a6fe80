//lint:file-ignore U1000 the mirrors keep every field of the C structures, used or not, so that each offset matches the headers (abi_test.go checks them)

package fabric

// The Go mirrors of the libfabric structures this package reads, writes or
// calls through. They follow the headers of libfabric 1.17 (Debian 12's
// libfabric-dev: rdma/fabric.h, fi_domain.h, fi_endpoint.h, fi_cm.h,
// fi_rma.h, fi_atomic.h, fi_eq.h) for the LP64 ABI, and are used with
// fi_getinfo(FI_VERSION(1, 11), ...): every field read here exists in that
// ABI and has kept its place since (libfabric only appends fields, and the
// library allocates every structure it hands back). abi_test.go compiles a
// C program against the installed headers and checks each offset and size
// below against offsetof/sizeof.
//
// Pointers into libfabric's memory are unsafe.Pointer (or typed pointers to
// these mirrors); the function pointers of ops tables are uintptr, passed
// to purego.SyscallN and never dereferenced from Go.

import "unsafe"

// apiVersion is FI_VERSION(1, 11): the ABI the mirrors below follow.
const apiVersion = 1<<16 | 11

// Capability and flag bits (rdma/fabric.h, fi_atomic.h).
const (
	fiMSG            = 1 << 1
	fiRMA            = 1 << 2
	fiAtomic         = 1 << 4
	fiRead           = 1 << 8
	fiWrite          = 1 << 9
	fiRemoteRead     = 1 << 12
	fiRemoteWrite    = 1 << 13
	fiFence          = 1 << 21
	fiCompletion     = 1 << 24
	fiTransmit       = 1 << 11 // FI_SEND
	fiRecv           = 1 << 10
	fiFetchAtomic    = 1 << 58
	fiCompareAtomic  = 1 << 59
	fiContext        = 1 << 59 // mode bit
	fiContext2       = 1 << 52 // mode bit
	fiRMAEvent       = 1 << 56
	fiSource         = 1 << 57
	fiLocalComm      = 1 << 51
	fiRemoteComm     = 1 << 52
	fiDeliveryComp   = 1 << 28
	fiTransmitComp   = 1 << 27
	fiInjectComplete = 1 << 26
)

// Memory registration modes (rdma/fabric.h).
const (
	mrLocal    = 1 << 2
	mrRaw      = 1 << 3
	mrVirtAddr = 1 << 4
	mrAllocd   = 1 << 5
	mrProvKey  = 1 << 6
	mrEndpoint = 1 << 9
	mrBasic    = 1 // FI_MR_BASIC, an old name for VIRT_ADDR|ALLOCATED|PROV_KEY
)

// Enumerations (rdma/fabric.h, fi_domain.h, fi_eq.h).
const (
	epRDM           = 3 // FI_EP_RDM
	progressAuto    = 1 // FI_PROGRESS_AUTO
	avTable         = 2 // FI_AV_TABLE
	cqFormatContext = 1 // FI_CQ_FORMAT_CONTEXT
	waitNone        = 0 // FI_WAIT_NONE
	waitUnspec      = 1 // FI_WAIT_UNSPEC
	waitFD          = 3 // FI_WAIT_FD
	ctlGetWait      = 5 // FI_GETWAIT
	ctlEnable       = 6 // FI_ENABLE
)

// Error numbers (rdma/fi_errno.h; the small ones are Linux errno values).
const (
	fiEPERM        = 1
	fiEAGAIN       = 11
	fiEACCES       = 13
	fiEINVAL       = 22
	fiENOSYS       = 38
	fiENODATA      = 61
	fiEOPNOTSUPP   = 95
	fiEREMOTEIO    = 121
	fiECANCELED    = 125
	fiEKEYREJECTED = 129
	fiETIMEDOUT    = 110
	fiEAVAIL       = 259
	fiENOKEY       = 266
)

// fi_datatype and fi_op (fi_domain.h).
const (
	dtInt32   = 4
	dtUint32  = 5
	dtInt64   = 6
	dtUint64  = 7
	dtFloat   = 8
	dtDouble  = 9
	dtInt128  = 14 // FI_INT128 = FI_DATATYPE_LAST
	opMin     = 0
	opMax     = 1
	opSum     = 2
	opBor     = 6
	opBand    = 7
	opBxor    = 9
	opRead    = 10
	opWrite   = 11
	opCswap   = 12
	opInvalid = -1
)

// fiInfo mirrors struct fi_info (rdma/fabric.h).
type fiInfo struct {
	next        *fiInfo
	caps        uint64
	mode        uint64
	addrFormat  uint32
	srcAddrlen  uintptr
	destAddrlen uintptr
	srcAddr     unsafe.Pointer
	destAddr    unsafe.Pointer
	handle      unsafe.Pointer
	txAttr      *fiTxAttr
	rxAttr      *fiRxAttr
	epAttr      *fiEpAttr
	domainAttr  *fiDomainAttr
	fabricAttr  *fiFabricAttr
	nic         unsafe.Pointer
}

// fiTxAttr mirrors struct fi_tx_attr (rdma/fabric.h).
type fiTxAttr struct {
	caps        uint64
	mode        uint64
	opFlags     uint64
	msgOrder    uint64
	compOrder   uint64
	injectSize  uintptr
	size        uintptr
	iovLimit    uintptr
	rmaIovLimit uintptr
	tclass      uint32
}

// fiRxAttr mirrors struct fi_rx_attr (rdma/fabric.h).
type fiRxAttr struct {
	caps              uint64
	mode              uint64
	opFlags           uint64
	msgOrder          uint64
	compOrder         uint64
	totalBufferedRecv uintptr
	size              uintptr
	iovLimit          uintptr
}

// fiEpAttr mirrors struct fi_ep_attr (rdma/fabric.h).
type fiEpAttr struct {
	typ             int32
	protocol        uint32
	protocolVersion uint32
	maxMsgSize      uintptr
	msgPrefixSize   uintptr
	maxOrderRawSize uintptr
	maxOrderWarSize uintptr
	maxOrderWawSize uintptr
	memTagFormat    uint64
	txCtxCnt        uintptr
	rxCtxCnt        uintptr
	authKeySize     uintptr
	authKey         unsafe.Pointer
}

// fiDomainAttr mirrors struct fi_domain_attr (rdma/fabric.h).
type fiDomainAttr struct {
	domain          unsafe.Pointer
	name            unsafe.Pointer
	threading       int32
	controlProgress int32
	dataProgress    int32
	resourceMgmt    int32
	avType          int32
	mrMode          int32
	mrKeySize       uintptr
	cqDataSize      uintptr
	cqCnt           uintptr
	epCnt           uintptr
	txCtxCnt        uintptr
	rxCtxCnt        uintptr
	maxEpTxCtx      uintptr
	maxEpRxCtx      uintptr
	maxEpStxCtx     uintptr
	maxEpSrxCtx     uintptr
	cntrCnt         uintptr
	mrIovLimit      uintptr
	caps            uint64
	mode            uint64
	authKey         unsafe.Pointer
	authKeySize     uintptr
	maxErrData      uintptr
	mrCnt           uintptr
	tclass          uint32
}

// fiFabricAttr mirrors struct fi_fabric_attr (rdma/fabric.h).
type fiFabricAttr struct {
	fabric      unsafe.Pointer
	name        unsafe.Pointer
	provName    unsafe.Pointer
	provVersion uint32
	apiVersion  uint32
}

// fid mirrors struct fid (rdma/fabric.h), the head of every descriptor.
type fid struct {
	fclass  uintptr
	context unsafe.Pointer
	ops     *fiOps
}

// fiOps mirrors struct fi_ops (rdma/fabric.h).
type fiOps struct {
	size, close, bind, control, opsOpen, tostr, opsSet uintptr
}

// fidFabric mirrors struct fid_fabric (rdma/fabric.h).
type fidFabric struct {
	fid        fid
	ops        *fiOpsFabric
	apiVersion uint32
}

// fiOpsFabric mirrors struct fi_ops_fabric (rdma/fabric.h).
type fiOpsFabric struct {
	size, domain, passiveEp, eqOpen, waitOpen, trywait, domain2 uintptr
}

// fidDomain mirrors struct fid_domain (rdma/fi_domain.h).
type fidDomain struct {
	fid fid
	ops *fiOpsDomain
	mr  *fiOpsMR
}

// fiOpsDomain mirrors struct fi_ops_domain (rdma/fi_domain.h).
type fiOpsDomain struct {
	size, avOpen, cqOpen, endpoint, scalableEp, cntrOpen, pollOpen uintptr
	stxCtx, srxCtx, queryAtomic, queryCollective, endpoint2        uintptr
}

// fiOpsMR mirrors struct fi_ops_mr (rdma/fi_domain.h).
type fiOpsMR struct {
	size, reg, regv, regattr uintptr
}

// fidMR mirrors struct fid_mr (rdma/fi_domain.h).
type fidMR struct {
	fid     fid
	memDesc unsafe.Pointer
	key     uint64
}

// fiAVAttr mirrors struct fi_av_attr (rdma/fi_domain.h).
type fiAVAttr struct {
	typ       int32
	rxCtxBits int32
	count     uintptr
	epPerNode uintptr
	name      uintptr
	mapAddr   uintptr
	flags     uint64
}

// fidAV mirrors struct fid_av (rdma/fi_domain.h).
type fidAV struct {
	fid fid
	ops *fiOpsAV
}

// fiOpsAV mirrors struct fi_ops_av (rdma/fi_domain.h).
type fiOpsAV struct {
	size, insert, insertsvc, insertsym, remove, lookup, straddr, avSet uintptr
}

// fidEP mirrors struct fid_ep (rdma/fi_endpoint.h).
type fidEP struct {
	fid        fid
	ops        unsafe.Pointer
	cm         *fiOpsCM
	msg        unsafe.Pointer
	rma        *fiOpsRMA
	tagged     unsafe.Pointer
	atomic     *fiOpsAtomic
	collective unsafe.Pointer
}

// fiOpsCM mirrors struct fi_ops_cm (rdma/fi_cm.h).
type fiOpsCM struct {
	size, setname, getname, getpeer, connect, listen, accept, reject, shutdown, join uintptr
}

// fiOpsRMA mirrors struct fi_ops_rma (rdma/fi_rma.h).
type fiOpsRMA struct {
	size, read, readv, readmsg, write, writev, writemsg, inject, writedata, injectdata uintptr
}

// fiOpsAtomic mirrors struct fi_ops_atomic (rdma/fi_atomic.h).
type fiOpsAtomic struct {
	size, write, writev, writemsg, inject      uintptr
	readwrite, readwritev, readwritemsg        uintptr
	compwrite, compwritev, compwritemsg        uintptr
	writevalid, readwritevalid, compwritevalid uintptr
}

// fiAtomicAttr mirrors struct fi_atomic_attr (rdma/fi_atomic.h).
type fiAtomicAttr struct {
	count, size uintptr
}

// fiCQAttr mirrors struct fi_cq_attr (rdma/fi_eq.h).
type fiCQAttr struct {
	size            uintptr
	flags           uint64
	format          int32
	waitObj         int32
	signalingVector int32
	waitCond        int32
	waitSet         uintptr
}

// fidCQ mirrors struct fid_cq (rdma/fi_eq.h).
type fidCQ struct {
	fid fid
	ops *fiOpsCQ
}

// fiOpsCQ mirrors struct fi_ops_cq (rdma/fi_eq.h).
type fiOpsCQ struct {
	size, read, readfrom, readerr, sread, sreadfrom, signal, strerror uintptr
}

// fiCQErrEntry mirrors struct fi_cq_err_entry (rdma/fi_eq.h).
type fiCQErrEntry struct {
	opContext   uintptr
	flags       uint64
	len         uintptr
	buf         uintptr
	data        uint64
	tag         uint64
	olen        uintptr
	err         int32
	provErrno   int32
	errData     uintptr
	errDataSize uintptr
}

// fiCntrAttr mirrors struct fi_cntr_attr (rdma/fi_eq.h).
type fiCntrAttr struct {
	events  int32
	waitObj int32
	waitSet uintptr
	flags   uint64
}

// fidCntr mirrors struct fid_cntr (rdma/fi_eq.h).
type fidCntr struct {
	fid fid
	ops *fiOpsCntr
}

// fiOpsCntr mirrors struct fi_ops_cntr (rdma/fi_eq.h).
type fiOpsCntr struct {
	size, read, readerr, add, set, wait, adderr, seterr uintptr
}
