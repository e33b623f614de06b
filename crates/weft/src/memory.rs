//! How the process's allocator keeps freed memory.
//!
//! A zone moving small files allocates and frees a buffer per file, many at a time. glibc
//! gives a heap's free top back to the system once it exceeds 128 KiB, so the next buffers
//! are fresh pages, each faulted in and zeroed by the kernel (`perf`: `do_anonymous_page`
//! under the `pread` of each file). Keeping up to [`KEEP_FREE`] per heap, and serving
//! buffers up to [`FROM_HEAP`] from the heaps rather than from mappings of their own, reuses
//! those pages. What the process holds is then its peak use, which is bounded by design
//! (pieces, bundles, concurrency), not what it uses at the moment. Fewer heaps than glibc's
//! default (8 per core) keep that peak nearer the untuned one: buffers are allocated on the
//! blocking threads that read them and freed on the threads that sent them, and each heap
//! keeps its own. The A/B behind these numbers (CPU, rate and peak RSS, and the two heaps
//! per core that were tried) is in docs/PERFORMANCE.md, "Measurements behind the design".

/// Freed memory a heap keeps before returning its top to the system.
const KEEP_FREE: i32 = 64 << 20;
/// Allocations up to this size come from a heap (glibc's largest dynamic threshold).
const FROM_HEAP: i32 = 32 << 20;
/// Heaps per core.
const HEAPS_PER_CORE: usize = 4;

/// Applies the settings above, unless the operator tuned malloc through the environment
/// (`GLIBC_TUNABLES=glibc.malloc.*` or `MALLOC_*_`), which then wins. Returns whether they
/// were applied. Only glibc has them; elsewhere nothing changes.
pub fn keep_freed_memory() -> bool {
    let vars = std::env::vars_os().filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    !tuned_by_operator(vars) && apply()
}

fn tuned_by_operator(mut vars: impl Iterator<Item = (String, String)>) -> bool {
    vars.any(|(k, v)| {
        (k == "GLIBC_TUNABLES" && v.contains("glibc.malloc."))
            || (k.starts_with("MALLOC_") && k.ends_with('_'))
    })
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn apply() -> bool {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let heaps = i32::try_from(HEAPS_PER_CORE * cores).unwrap_or(i32::MAX);
    // SAFETY: mallopt only changes allocator parameters; it is called before any thread
    // is started, and glibc takes the arena lock for it anyway.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, FROM_HEAP) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, KEEP_FREE) == 1
            && libc::mallopt(libc::M_ARENA_MAX, heaps) == 1
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn apply() -> bool {
    false
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    #[test]
    fn the_operators_malloc_settings_win() {
        let vars = |v: &[(&str, &str)]| {
            v.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        assert!(tuned_by_operator(
            vars(&[("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")]).into_iter()
        ));
        assert!(tuned_by_operator(vars(&[("MALLOC_ARENA_MAX_", "2")]).into_iter()));
        assert!(!tuned_by_operator(
            vars(&[("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX512F")]).into_iter()
        ));
        assert!(!tuned_by_operator(
            vars(&[("MALLOC_CONF", "x"), ("PATH", "/bin")]).into_iter()
        ));
    }

    #[test]
    fn buffers_of_megabytes_come_from_the_heap_and_stay_there() {
        // A 16 MiB buffer is mapped on its own by default (threshold 128 KiB, raised only
        // by frees of such mappings).
        assert!(apply());
        let buffer = vec![1u8; 16 << 20];
        // SAFETY: mallinfo2 only reads the allocator's counters.
        let held = unsafe { libc::mallinfo2() };
        assert_eq!(held.hblks, 0, "no allocation is mapped on its own");
        let heap = held.arena;
        drop(buffer);
        // SAFETY: as above.
        let after = unsafe { libc::mallinfo2() };
        assert_eq!(after.arena, heap, "the freed 16 MiB stay with the heap");
    }
}
