//! `weft pid mint|show`: persistent identifiers of collections and data objects.

use super::output::{format_millis, print_json, Result};
use super::Ctx;
use clap::{Args, Subcommand};
use weft_client::wire::PidWire;
use weft_types::escape_controls;

#[derive(Debug, Args)]
pub struct PidArgs {
    #[command(subcommand)]
    cmd: PidCmd,
}

#[derive(Debug, Subcommand)]
enum PidCmd {
    /// Give a collection or data object a PID (or print the one it has), alone on stdout.
    /// Anyone may resolve it: its path, checksum, replicas and metadata become public.
    Mint {
        path: String,
        #[arg(long)]
        json: bool,
    },
    /// What a PID stands for now: path (it follows moves), checksum, replicas, metadata.
    Show {
        /// PREFIX/SUFFIX
        pid: String,
        #[arg(long)]
        json: bool,
    },
}

pub async fn pid(ctx: &Ctx, a: PidArgs) -> Result {
    match a.cmd {
        PidCmd::Mint { path, json } => {
            let path = ctx.resolve(&path).await?;
            let p = ctx.client.mint_pid(&path).await?;
            if json {
                return print_json(&p);
            }
            println!("{}", p.pid);
            ctx.info(format!(
                "{} is {path}; resolve it with `weft pid show {}` or GET /pid/{}",
                p.pid, p.pid, p.pid
            ));
            Ok(())
        }
        PidCmd::Show { pid, json } => {
            let p = ctx.client.resolve_pid(&pid).await?;
            if json {
                return print_json(&p);
            }
            print_pid(&p);
            Ok(())
        }
    }
}

fn print_pid(p: &PidWire) {
    println!("pid       {}", p.pid);
    println!("path      {}", p.path);
    println!("minted    {} UTC", format_millis(p.created));
    if let Some(t) = p.removed {
        println!(
            "removed   {} UTC (the PID stays; the data is gone)",
            format_millis(t)
        );
    }
    if let Some(n) = &p.node {
        println!("kind      {}", n.kind);
        println!("size      {}", n.size);
        println!("checksum  {}", n.checksum.as_deref().unwrap_or("-"));
        for r in &n.replicas {
            println!("replica   {}:{}  {}", r.zone, r.resource, r.state);
        }
    }
    for a in &p.metadata {
        let line = format!("meta      {} = {} {}", a.attr, a.value, a.unit);
        println!("{}", escape_controls(&line));
    }
}
