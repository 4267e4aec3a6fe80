package core

import (
	"errors"
	"fmt"
	"strconv"
)

// Code classifies a failure. The numbers equal OpenFAM 3.2's Fam_Error values
// and the FAM_E* macros of openfam.h, so they cross every binding unchanged.
type Code int

// The Code constants, their messages and the FAM_E* macro names are in
// errors_gen.go, written from internal/gentables/errors.table.
//go:generate go run ../internal/gentables

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
