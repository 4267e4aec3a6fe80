package fabric

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// field is one offset (or, with name "sizeof", a size) of a Go mirror
// that must equal the C structure's.
type field struct {
	ctype, name string
	goval       uintptr
}

// layout lists every field this package reads or writes in libfabric's
// memory, or passes to it, with the mirror's offset.
func layout() []field {
	var (
		info fiInfo
		tx   fiTxAttr
		ep   fiEpAttr
		dom  fiDomainAttr
		fab  fiFabricAttr
		f    fid
		fo   fiOps
		ff   fidFabric
		off  fiOpsFabric
		fd   fidDomain
		od   fiOpsDomain
		om   fiOpsMR
		mr   fidMR
		ava  fiAVAttr
		av   fidAV
		oav  fiOpsAV
		fe   fidEP
		ocm  fiOpsCM
		orma fiOpsRMA
		oat  fiOpsAtomic
		aa   fiAtomicAttr
		cqa  fiCQAttr
		cq   fidCQ
		ocq  fiOpsCQ
		ee   fiCQErrEntry
		cta  fiCntrAttr
		ct   fidCntr
		oct  fiOpsCntr
	)
	return []field{
		{"struct fi_info", "sizeof", unsafe.Sizeof(info)},
		{"struct fi_info", "caps", unsafe.Offsetof(info.caps)}, {"struct fi_info", "mode", unsafe.Offsetof(info.mode)},
		{"struct fi_info", "tx_attr", unsafe.Offsetof(info.txAttr)}, {"struct fi_info", "ep_attr", unsafe.Offsetof(info.epAttr)},
		{"struct fi_info", "domain_attr", unsafe.Offsetof(info.domainAttr)}, {"struct fi_info", "fabric_attr", unsafe.Offsetof(info.fabricAttr)},
		{"struct fi_info", "nic", unsafe.Offsetof(info.nic)},
		{"struct fi_tx_attr", "op_flags", unsafe.Offsetof(tx.opFlags)}, {"struct fi_tx_attr", "tclass", unsafe.Offsetof(tx.tclass)},
		{"struct fi_ep_attr", "type", unsafe.Offsetof(ep.typ)}, {"struct fi_ep_attr", "max_msg_size", unsafe.Offsetof(ep.maxMsgSize)},
		{"struct fi_ep_attr", "auth_key", unsafe.Offsetof(ep.authKey)},
		{"struct fi_domain_attr", "threading", unsafe.Offsetof(dom.threading)}, {"struct fi_domain_attr", "data_progress", unsafe.Offsetof(dom.dataProgress)},
		{"struct fi_domain_attr", "mr_mode", unsafe.Offsetof(dom.mrMode)}, {"struct fi_domain_attr", "mr_key_size", unsafe.Offsetof(dom.mrKeySize)},
		{"struct fi_domain_attr", "caps", unsafe.Offsetof(dom.caps)}, {"struct fi_domain_attr", "tclass", unsafe.Offsetof(dom.tclass)},
		{"struct fi_fabric_attr", "prov_name", unsafe.Offsetof(fab.provName)}, {"struct fi_fabric_attr", "api_version", unsafe.Offsetof(fab.apiVersion)},
		{"struct fid", "ops", unsafe.Offsetof(f.ops)}, {"struct fid", "sizeof", unsafe.Sizeof(f)},
		{"struct fi_ops", "close", unsafe.Offsetof(fo.close)}, {"struct fi_ops", "bind", unsafe.Offsetof(fo.bind)}, {"struct fi_ops", "control", unsafe.Offsetof(fo.control)},
		{"struct fid_fabric", "ops", unsafe.Offsetof(ff.ops)},
		{"struct fi_ops_fabric", "domain", unsafe.Offsetof(off.domain)},
		{"struct fid_domain", "ops", unsafe.Offsetof(fd.ops)}, {"struct fid_domain", "mr", unsafe.Offsetof(fd.mr)},
		{"struct fi_ops_domain", "av_open", unsafe.Offsetof(od.avOpen)}, {"struct fi_ops_domain", "cq_open", unsafe.Offsetof(od.cqOpen)},
		{"struct fi_ops_domain", "endpoint", unsafe.Offsetof(od.endpoint)}, {"struct fi_ops_domain", "query_atomic", unsafe.Offsetof(od.queryAtomic)},
		{"struct fi_ops_mr", "reg", unsafe.Offsetof(om.reg)},
		{"struct fid_mr", "mem_desc", unsafe.Offsetof(mr.memDesc)}, {"struct fid_mr", "key", unsafe.Offsetof(mr.key)},
		{"struct fi_av_attr", "type", unsafe.Offsetof(ava.typ)}, {"struct fi_av_attr", "flags", unsafe.Offsetof(ava.flags)}, {"struct fi_av_attr", "sizeof", unsafe.Sizeof(ava)},
		{"struct fid_av", "ops", unsafe.Offsetof(av.ops)},
		{"struct fi_ops_av", "insert", unsafe.Offsetof(oav.insert)}, {"struct fi_ops_av", "remove", unsafe.Offsetof(oav.remove)},
		{"struct fid_ep", "cm", unsafe.Offsetof(fe.cm)}, {"struct fid_ep", "rma", unsafe.Offsetof(fe.rma)}, {"struct fid_ep", "atomic", unsafe.Offsetof(fe.atomic)},
		{"struct fi_ops_cm", "getname", unsafe.Offsetof(ocm.getname)},
		{"struct fi_ops_rma", "read", unsafe.Offsetof(orma.read)}, {"struct fi_ops_rma", "readmsg", unsafe.Offsetof(orma.readmsg)},
		{"struct fi_ops_rma", "write", unsafe.Offsetof(orma.write)}, {"struct fi_ops_rma", "writemsg", unsafe.Offsetof(orma.writemsg)},
		{"struct fi_ops_atomic", "write", unsafe.Offsetof(oat.write)}, {"struct fi_ops_atomic", "readwrite", unsafe.Offsetof(oat.readwrite)},
		{"struct fi_ops_atomic", "compwrite", unsafe.Offsetof(oat.compwrite)},
		{"struct fi_atomic_attr", "sizeof", unsafe.Sizeof(aa)},
		{"struct fi_cq_attr", "format", unsafe.Offsetof(cqa.format)}, {"struct fi_cq_attr", "wait_obj", unsafe.Offsetof(cqa.waitObj)},
		{"struct fi_cq_attr", "sizeof", unsafe.Sizeof(cqa)},
		{"struct fid_cq", "ops", unsafe.Offsetof(cq.ops)},
		{"struct fi_ops_cq", "read", unsafe.Offsetof(ocq.read)}, {"struct fi_ops_cq", "readerr", unsafe.Offsetof(ocq.readerr)},
		{"struct fi_ops_cq", "sread", unsafe.Offsetof(ocq.sread)}, {"struct fi_ops_cq", "signal", unsafe.Offsetof(ocq.signal)},
		{"struct fi_cq_err_entry", "err", unsafe.Offsetof(ee.err)}, {"struct fi_cq_err_entry", "prov_errno", unsafe.Offsetof(ee.provErrno)},
		{"struct fi_cq_err_entry", "sizeof", unsafe.Sizeof(ee)},
		{"struct fi_context2", "sizeof", unsafe.Sizeof(fiCtx{})},
		{"struct fi_cntr_attr", "wait_obj", unsafe.Offsetof(cta.waitObj)}, {"struct fi_cntr_attr", "flags", unsafe.Offsetof(cta.flags)},
		{"struct fi_cntr_attr", "sizeof", unsafe.Sizeof(cta)},
		{"struct fid_cntr", "ops", unsafe.Offsetof(ct.ops)}, {"struct fi_ops_cntr", "read", unsafe.Offsetof(oct.read)},
	}
}

// constants lists the values this package uses and the C names they copy.
var constants = []struct {
	cname string
	goval int64
}{
	{"FI_RMA", fiRMA}, {"FI_ATOMIC", fiAtomic}, {"FI_READ", fiRead}, {"FI_WRITE", fiWrite},
	{"FI_REMOTE_READ", fiRemoteRead}, {"FI_REMOTE_WRITE", fiRemoteWrite}, {"FI_FENCE", fiFence},
	{"FI_SEND", fiTransmit}, {"FI_RECV", fiRecv}, {"FI_FETCH_ATOMIC", fiFetchAtomic},
	{"FI_COMPARE_ATOMIC", fiCompareAtomic}, {"FI_CONTEXT", fiContext}, {"FI_CONTEXT2", fiContext2},
	{"FI_SOURCE", fiSource}, {"FI_RMA_EVENT", fiRMAEvent}, {"FI_DELIVERY_COMPLETE", fiDeliveryComp},
	{"FI_MR_LOCAL", mrLocal}, {"FI_MR_VIRT_ADDR", mrVirtAddr}, {"FI_MR_ALLOCATED", mrAllocd},
	{"FI_MR_PROV_KEY", mrProvKey}, {"FI_MR_ENDPOINT", mrEndpoint}, {"FI_MR_BASIC", mrBasic},
	{"FI_EP_RDM", epRDM}, {"FI_PROGRESS_AUTO", progressAuto}, {"FI_AV_TABLE", avTable},
	{"FI_CQ_FORMAT_CONTEXT", cqFormatContext}, {"FI_WAIT_NONE", waitNone}, {"FI_WAIT_FD", waitFD},
	{"FI_GETWAIT", ctlGetWait}, {"FI_ENABLE", ctlEnable}, {"FI_EAGAIN", fiEAGAIN}, {"FI_EACCES", fiEACCES}, {"FI_EINVAL", fiEINVAL},
	{"FI_ENODATA", fiENODATA}, {"FI_EAVAIL", fiEAVAIL}, {"FI_ENOKEY", fiENOKEY}, {"FI_EKEYREJECTED", fiEKEYREJECTED},
	{"FI_EPERM", fiEPERM}, {"FI_EREMOTEIO", fiEREMOTEIO}, {"FI_EOPNOTSUPP", fiEOPNOTSUPP},
	{"FI_INT32", dtInt32}, {"FI_UINT32", dtUint32}, {"FI_INT64", dtInt64}, {"FI_UINT64", dtUint64},
	{"FI_FLOAT", dtFloat}, {"FI_DOUBLE", dtDouble}, {"FI_INT128", dtInt128},
	{"FI_MIN", opMin}, {"FI_MAX", opMax}, {"FI_SUM", opSum}, {"FI_BOR", opBor}, {"FI_BAND", opBand},
	{"FI_BXOR", opBxor}, {"FI_ATOMIC_READ", opRead}, {"FI_ATOMIC_WRITE", opWrite}, {"FI_CSWAP", opCswap},
}

// TestABI compiles a C program against the installed libfabric headers
// and checks every mirrored offset, size and constant. It is skipped, with
// the reason printed, where the headers (libfabric-dev) or a C compiler
// are missing; the package itself needs neither.
func TestABI(t *testing.T) {
	const header = "/usr/include/rdma/fabric.h"
	if _, err := os.Stat(header); err != nil {
		t.Skipf("SKIP: libfabric headers absent (%s: %v); install libfabric-dev to check the struct layouts", header, err)
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skipf("SKIP: no C compiler to check the struct layouts: %v", err)
	}
	var src bytes.Buffer
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include <rdma/fabric.h>\n#include <rdma/fi_domain.h>\n" +
		"#include <rdma/fi_endpoint.h>\n#include <rdma/fi_cm.h>\n#include <rdma/fi_rma.h>\n#include <rdma/fi_atomic.h>\n" +
		"#include <rdma/fi_eq.h>\n#include <rdma/fi_errno.h>\nint main(void) {\n")
	fields := layout()
	for _, f := range fields {
		if f.name == "sizeof" {
			fmt.Fprintf(&src, "\tprintf(\"%%zu\\n\", sizeof(%s));\n", f.ctype)
		} else {
			fmt.Fprintf(&src, "\tprintf(\"%%zu\\n\", offsetof(%s, %s));\n", f.ctype, f.name)
		}
	}
	for _, c := range constants {
		fmt.Fprintf(&src, "\tprintf(\"%%lld\\n\", (long long)(%s));\n", c.cname)
	}
	fmt.Fprintf(&src, "\tprintf(\"%%d\\n\", FI_MAJOR_VERSION * 1000 + FI_MINOR_VERSION);\n\treturn 0;\n}\n")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "abi.c"), src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-o", filepath.Join(dir, "abi"), filepath.Join(dir, "abi.c")).CombinedOutput(); err != nil {
		t.Fatalf("compiling the layout check: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(dir, "abi")).Output()
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	next := func() int64 {
		if !sc.Scan() {
			t.Fatal("layout program printed too little")
		}
		v, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, f := range fields {
		if c := next(); c != int64(f.goval) {
			t.Errorf("%s %s: C %d, Go %d", f.ctype, f.name, c, f.goval)
		}
	}
	for _, c := range constants {
		if v := next(); v != c.goval {
			t.Errorf("%s: C %d, Go %d", c.cname, v, c.goval)
		}
	}
	v := next()
	t.Logf("checked %d offsets and sizes and %d constants against libfabric %d.%d headers", len(fields), len(constants), v/1000, v%1000)
}
