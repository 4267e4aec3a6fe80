/*
 * fam/fam_exception.h - OpenFAM 3.2 compatible error type (C++ only).
 *
 * Every method of openfam::fam, openfam::fam_context and the descriptor
 * classes reports failure by throwing openfam::Fam_Exception. Its
 * fam_error() is a Fam_Error value; the numbers equal OpenFAM 3.2's and the
 * absolute values of the FAM_E* codes of openfam.h.
 */
#ifndef OPENFAM_COMPAT_FAM_EXCEPTION_H
#define OPENFAM_COMPAT_FAM_EXCEPTION_H

#ifndef __cplusplus
#error "fam/fam_exception.h is a C++ header; C programs use fam/fam_c.h"
#endif

#include <exception>
#include <string>

namespace openfam {

/* Error numbers, identical to OpenFAM 3.2 (FAM_ERR_NO_SPACE = 14 included). */
enum Fam_Error {
    FAM_NO_ERROR = 0,
    /* BEGIN GENERATED from internal/gentables/errors.table; DO NOT EDIT */
    FAM_ERR_UNKNOWN = 1,
    FAM_ERR_NOPERM = 2,
    FAM_ERR_TIMEOUT = 3,
    FAM_ERR_INVALID = 4,
    FAM_ERR_LIBFABRIC = 5,
    FAM_ERR_SHM = 6,
    FAM_ERR_NOT_CREATED = 7,
    FAM_ERR_NOTFOUND = 8,
    FAM_ERR_ALREADYEXIST = 9,
    FAM_ERR_ALLOCATOR = 10,
    FAM_ERR_RPC = 11,
    FAM_ERR_PMI = 12,
    FAM_ERR_OUTOFRANGE = 13,
    FAM_ERR_NO_SPACE = 14,
    FAM_ERR_NULLPTR = 15,
    FAM_ERR_UNIMPL = 16,
    FAM_ERR_RESOURCE = 17,
    FAM_ERR_INVALIDOP = 18,
    FAM_ERR_RPC_CLIENT_NOTFOUND = 19,
    FAM_ERR_MEMSERV_LIST_EMPTY = 20,
    FAM_ERR_METADATA = 21,
    FAM_ERR_MEMORY = 22,
    FAM_ERR_NAME_TOO_LONG = 23,
    FAM_ERR_ATL_QUEUE_FULL = 24,
    FAM_ERR_ATL_QUEUE_INSERT = 25,
    FAM_ERR_ATL_NOT_ENABLED = 26,
    FAM_ERR_ATL = 27,
    FAM_BACKUP_NOT_CREATED = 28,
    FAM_BACKUP_NOTFOUND = 29,
    FAM_BACKUP_INFO_NOTFOUND = 30,
    FAM_ERR_NOT_PWR_TWO = 31
    /* END GENERATED */
};

/*
 * The exception thrown by every OpenFAM call. Copyable; the message is owned
 * by the object. fam_error_msg() and what() return the same text, valid for
 * the object's lifetime. The accessors are const and noexcept (OpenFAM's
 * master branch declares them non-const; calls on non-const objects, as all
 * OpenFAM programs make, compile either way), and what() overrides
 * std::exception::what(), so catch (std::exception &) also sees the message.
 */
class Fam_Exception : public std::exception {
  public:
    /* An exception with FAM_ERR_UNKNOWN and an empty message. */
    Fam_Exception() : famErrMsg(), famErr(FAM_ERR_UNKNOWN) {}
    /* An exception with FAM_ERR_UNKNOWN and msg (NULL reads as ""). */
    Fam_Exception(const char *msg)
        : famErrMsg(msg ? msg : ""), famErr(FAM_ERR_UNKNOWN) {}
    /* An exception with code fErr and msg (NULL reads as ""). */
    Fam_Exception(enum Fam_Error fErr, const char *msg)
        : famErrMsg(msg ? msg : ""), famErr(fErr) {}
    Fam_Exception(const Fam_Exception &other)
        : std::exception(other), famErrMsg(other.famErrMsg),
          famErr(other.famErr) {}
    Fam_Exception &operator=(const Fam_Exception &other) {
        if (this != &other) {
            std::exception::operator=(other);
            famErrMsg = other.famErrMsg;
            famErr = other.famErr;
        }
        return *this;
    }
    virtual ~Fam_Exception() noexcept {}

    /* The failure's message. */
    virtual const char *fam_error_msg() const noexcept {
        return famErrMsg.c_str();
    }
    /* The failure's Fam_Error number. */
    virtual int fam_error() const noexcept { return static_cast<int>(famErr); }
    /* Same text as fam_error_msg(). */
    virtual const char *what() const noexcept { return famErrMsg.c_str(); }

  protected:
    std::string famErrMsg;
    enum Fam_Error famErr;
};

} // namespace openfam

/* OpenFAM's header has this at global scope and programs rely on it
 * (string, cout, endl without std::). Kept for source compatibility. */
using namespace std;

#endif /* OPENFAM_COMPAT_FAM_EXCEPTION_H */
