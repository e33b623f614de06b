//! `weft zone status`.

use super::output::{format_millis, print_json, Result};
use super::Ctx;
use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct ZoneArgs {
    #[command(subcommand)]
    cmd: ZoneCmd,
}

#[derive(Debug, Subcommand)]
enum ZoneCmd {
    /// Show the zone's version and the state of its background workers.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub async fn zone(ctx: &Ctx, a: ZoneArgs) -> Result {
    match a.cmd {
        ZoneCmd::Status { json } => {
            let s = ctx.client.zone_status().await?;
            if json {
                return print_json(&s);
            }
            println!("zone     {}", s.zone);
            println!("version  {}", s.version);
            let w = s.workers.iter().map(|w| w.name.len()).max().unwrap_or(0);
            for worker in &s.workers {
                let last = worker
                    .last_run
                    .map_or("never".to_owned(), |ms| format!("{} UTC", format_millis(ms)));
                let error = worker
                    .last_error
                    .as_deref()
                    .map(|e| format!("  last error: {e}"))
                    .unwrap_or_default();
                println!(
                    "  {:w$}  runs {}  items {}  last run {last}{error}",
                    worker.name, worker.runs, worker.items
                );
            }
            Ok(())
        }
    }
}
