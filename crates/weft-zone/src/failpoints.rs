//! Crash points for the fault tests. Built with the `failpoints` feature (the test command
//! does; a release build does not), `FAILPOINTS=<point>=return` makes the process kill
//! itself with SIGKILL when it reaches that point, as a power cut or the OOM killer would:
//! no destructor runs, nothing is flushed. A hold point instead makes the task wait there,
//! `FAILPOINTS=<point>=return(<ms>)`, without holding a thread: a test catches work under
//! way however fast the machine. Without the feature a point compiles to nothing.

/// Reads `FAILPOINTS`; call once at process start.
pub fn setup() {
    #[cfg(feature = "failpoints")]
    std::mem::forget(fail::FailScenario::setup());
}

/// Kills the process at a crash point.
#[cfg_attr(not(feature = "failpoints"), allow(dead_code))]
pub(crate) fn crash() -> ! {
    // SAFETY: kill(2) on our own pid; SIGKILL cannot be caught, so it never returns.
    unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    unreachable!("SIGKILL was sent")
}

/// Kills the process here when `FAILPOINTS` names this point (test builds only).
macro_rules! crash_point {
    ($name:literal) => {
        fail::fail_point!($name, |_| $crate::failpoints::crash())
    };
}
pub(crate) use crash_point;

/// Makes the task wait here for the milliseconds `FAILPOINTS=<name>=return(<ms>)` names
/// (test builds only).
macro_rules! hold_point {
    ($name:literal) => {
        #[cfg(feature = "failpoints")]
        if let Some(ms) = fail::eval($name, |arg| arg.and_then(|a| a.parse::<u64>().ok()).unwrap_or(0)) {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
        }
    };
}
pub(crate) use hold_point;
