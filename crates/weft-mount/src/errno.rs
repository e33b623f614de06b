//! What a program sees when the zone says no: the zone's stable codes as `errno` values.

use weft_client::ClientError;
use weft_types::{Error, ErrorCode};

/// An `errno` value (positive), as the kernel passes it on to the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

pub type FsResult<T> = Result<T, Errno>;

impl Errno {
    pub const ENOENT: Errno = Errno(libc::ENOENT);
    pub const EIO: Errno = Errno(libc::EIO);
    pub const EACCES: Errno = Errno(libc::EACCES);
    pub const EEXIST: Errno = Errno(libc::EEXIST);
    pub const ENOTDIR: Errno = Errno(libc::ENOTDIR);
    pub const EISDIR: Errno = Errno(libc::EISDIR);
    pub const EINVAL: Errno = Errno(libc::EINVAL);
    pub const ENOSPC: Errno = Errno(libc::ENOSPC);
    pub const ENOTEMPTY: Errno = Errno(libc::ENOTEMPTY);
    pub const EDQUOT: Errno = Errno(libc::EDQUOT);
    pub const ENAMETOOLONG: Errno = Errno(libc::ENAMETOOLONG);
    pub const EBADF: Errno = Errno(libc::EBADF);
    pub const ERANGE: Errno = Errno(libc::ERANGE);
    pub const ENODATA: Errno = Errno(libc::ENODATA);
    pub const ENOTSUP: Errno = Errno(libc::ENOTSUP);
    pub const EPERM: Errno = Errno(libc::EPERM);
    pub const ESTALE: Errno = Errno(libc::ESTALE);
    pub const EXDEV: Errno = Errno(libc::EXDEV);

    /// The errno of a zone's code; `None` (a fault on the way, a bug) is `EIO`.
    pub fn of_code(code: Option<ErrorCode>) -> Errno {
        use ErrorCode::*;
        match code {
            Some(NotFound | UnknownZone) => Errno::ENOENT,
            Some(AlreadyExists) => Errno::EEXIST,
            Some(CollectionNotEmpty) => Errno::ENOTEMPTY,
            Some(NotACollection) => Errno::ENOTDIR,
            Some(IsACollection) => Errno::EISDIR,
            Some(Forbidden | Unauthenticated | TokenExpired) => Errno::EACCES,
            Some(QuotaExceeded) => Errno::EDQUOT,
            Some(NameTooLong | PathTooLong) => Errno::ENAMETOOLONG,
            Some(InvalidName | InvalidPath | InvalidArgument) => Errno::EINVAL,
            // The object changed in the zone under an open file (another writer).
            Some(Conflict) => Errno::ESTALE,
            _ => Errno::EIO,
        }
    }

    pub fn of_client(e: &ClientError) -> Errno {
        Errno::of_code(e.error_code())
    }

    pub fn of_error(e: &Error) -> Errno {
        Errno::of_code(Some(e.code))
    }

    pub fn of_io(e: &std::io::Error) -> Errno {
        Errno(e.raw_os_error().unwrap_or(libc::EIO))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_codes_a_program_can_act_on_have_their_own_errno() {
        let api = |code: &str| ClientError::Api {
            status: Some(400),
            code: code.into(),
            message: String::new(),
        };
        assert_eq!(Errno::of_client(&api("not_found")), Errno::ENOENT);
        assert_eq!(Errno::of_client(&api("forbidden")), Errno::EACCES);
        assert_eq!(Errno::of_client(&api("already_exists")), Errno::EEXIST);
        assert_eq!(Errno::of_client(&api("collection_not_empty")), Errno::ENOTEMPTY);
        assert_eq!(Errno::of_client(&api("quota_exceeded")), Errno::EDQUOT);
        assert_eq!(Errno::of_client(&api("storage_unavailable")), Errno::EIO);
        let down = ClientError::Unreachable {
            url: "http://127.0.0.1:1".into(),
            cause: "refused".into(),
        };
        assert_eq!(Errno::of_client(&down), Errno::EIO);
    }
}
