//! The progress bar of `put`, `get` and `transfer wait`: one bar over all bytes (with a file count when
//! there are several files), on stderr, only when stderr is a terminal and `--quiet` is off.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use weft_client::Progress;

pub struct Bar {
    bar: Option<ProgressBar>,
    files_total: u64,
    files_done: AtomicU64,
}

impl Bar {
    pub fn new(total_bytes: u64, files_total: u64, quiet: bool) -> Arc<Bar> {
        let shown = !quiet && std::io::stderr().is_terminal();
        let bar = shown.then(|| {
            let bar = ProgressBar::with_draw_target(Some(total_bytes), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:30.cyan/blue} {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            bar
        });
        let b = Arc::new(Bar {
            bar,
            files_total,
            files_done: AtomicU64::new(0),
        });
        b.show_files();
        b
    }

    /// The callback the client reports bytes to.
    pub fn callback(self: &Arc<Self>) -> Option<Progress> {
        let bar = self.bar.clone()?;
        Some(Arc::new(move |delta: i64| {
            if delta >= 0 {
                bar.inc(delta as u64)
            } else {
                bar.dec(delta.unsigned_abs())
            }
        }))
    }

    pub fn file_done(&self) {
        self.files_done.fetch_add(1, Ordering::Relaxed);
        self.show_files();
    }

    fn show_files(&self) {
        if let (Some(bar), true) = (&self.bar, self.files_total > 1) {
            bar.set_message(format!(
                "{}/{} files",
                self.files_done.load(Ordering::Relaxed),
                self.files_total
            ));
        }
    }

    /// Sets the bar from totals reported by a zone (`weft transfer wait`).
    pub fn set(&self, bytes: u64, files_done: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(bytes);
        }
        self.files_done.store(files_done, Ordering::Relaxed);
        self.show_files();
    }

    /// Prints a line above the bar (a per-file failure) without tearing it.
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
