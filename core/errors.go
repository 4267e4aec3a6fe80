package core

import (
	"errors"
	"fmt"
	"strconv"
)

// Code classifies a failure. The numbers equal OpenFAM 3.2's Fam_Error values
// and the FAM_E* macros of openfam.h, so they cross every binding unchanged.
type Code int

// Codes used by this implementation (a subset of Fam_Error).
const (
	CodeUnknown          Code = 1
	CodeNoPerm           Code = 2
	CodeTimeout          Code = 3
	CodeInvalid          Code = 4
	CodeNotFound         Code = 8
	CodeExists           Code = 9
	CodeAllocator        Code = 10
	CodeRPC              Code = 11
	CodePMI              Code = 12
	CodeOutOfRange       Code = 13
	CodeNoSpace          Code = 14
	CodeNullPtr          Code = 15
	CodeUnimplemented    Code = 16
	CodeResource         Code = 17
	CodeInvalidOp        Code = 18
	CodeMetadata         Code = 21
	CodeMemory           Code = 22
	CodeNameTooLong      Code = 23
	CodeBackupNotCreated Code = 28
	CodeBackupNotFound   Code = 29
)

var codeNames = map[Code]string{
	CodeUnknown: "unknown error", CodeNoPerm: "permission denied", CodeTimeout: "timed out",
	CodeInvalid: "invalid argument", CodeNotFound: "not found", CodeExists: "already exists",
	CodeAllocator: "allocator error", CodeRPC: "rpc error", CodePMI: "launcher error",
	CodeOutOfRange: "out of range", CodeNoSpace: "no space", CodeNullPtr: "null pointer",
	CodeUnimplemented: "not implemented", CodeResource: "resource error",
	CodeInvalidOp: "invalid operation", CodeMetadata: "metadata error", CodeMemory: "memory error",
	CodeNameTooLong: "name too long", CodeBackupNotCreated: "backup not created",
	CodeBackupNotFound: "backup not found",
}

// macroNames are the FAM_E* macro names of include/openfam.h, by number:
// every OpenFAM Fam_Error value, not only the codes this library returns.
var macroNames = map[Code]string{
	1: "FAM_EUNKNOWN", 2: "FAM_ENOPERM", 3: "FAM_ETIMEOUT", 4: "FAM_EINVAL",
	5: "FAM_ELIBFABRIC", 6: "FAM_ESHM", 7: "FAM_ENOTCREATED", 8: "FAM_ENOTFOUND",
	9: "FAM_EEXIST", 10: "FAM_EALLOCATOR", 11: "FAM_ERPC", 12: "FAM_EPMI",
	13: "FAM_ERANGE", 14: "FAM_ENOSPACE", 15: "FAM_ENULLPTR", 16: "FAM_EUNIMPL",
	17: "FAM_ERESOURCE", 18: "FAM_EINVALIDOP", 19: "FAM_ERPCCLIENTNOTFOUND",
	20: "FAM_EMEMSERVLISTEMPTY", 21: "FAM_EMETADATA", 22: "FAM_EMEMORY",
	23: "FAM_ENAMETOOLONG", 24: "FAM_EATLQUEUEFULL", 25: "FAM_EATLQUEUEINSERT",
	26: "FAM_EATLNOTENABLED", 27: "FAM_EATL", 28: "FAM_EBACKUPNOTCREATED",
	29: "FAM_EBACKUPNOTFOUND", 30: "FAM_EBACKUPINFONOTFOUND", 31: "FAM_ENOTPWRTWO",
}

// Macro is the code's FAM_E* macro name in include/openfam.h
// ("FAM_ENOTFOUND"), or "FAM_E" and its number for one openfam.h lacks.
func (c Code) Macro() string {
	if s, ok := macroNames[c]; ok {
		return s
	}
	return "FAM_E" + strconv.Itoa(int(c))
}

// String names the code ("not found").
func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("error %d", int(c))
}

// Error is the error type every core call returns: a code for programs, and
// the operation plus a message for people.
type Error struct {
	Code Code
	Op   string // the API call that failed, e.g. "fam_allocate"
	Msg  string
}

// Error formats the error as "op: msg".
func (e *Error) Error() string {
	if e.Op == "" {
		return e.Msg
	}
	return e.Op + ": " + e.Msg
}

// Errorf makes an *Error with a formatted message.
func Errorf(code Code, op, format string, args ...any) *Error {
	return &Error{Code: code, Op: op, Msg: fmt.Sprintf(format, args...)}
}

// CodeOf returns the code of err: 0 for nil, the code of an *Error found with
// errors.As, CodeUnknown for anything else.
func CodeOf(err error) Code {
	if err == nil {
		return 0
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeUnknown
}
