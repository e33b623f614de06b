//! `weft policy apply|ls|rm|test|status` (administrators) and `weft qos add|ls|rm`.

use super::output::{format_millis, human_bytes, print_json, Failure, Result};
use super::Ctx;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct PolicyArgs {
    #[command(subcommand)]
    cmd: PolicyCmd,
}

#[derive(Debug, Subcommand)]
enum PolicyCmd {
    /// Load the rules of a policy file (TOML), replacing loaded rules of the same names.
    /// Nothing is loaded when any rule is wrong; the error names the line and the field.
    Apply {
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// The loaded rules.
    Ls {
        #[arg(long)]
        json: bool,
    },
    /// Unload a rule (transfers it started go on).
    Rm { name: String },
    /// What the rules of FILE would do to PATH (and everything below it), without doing it:
    /// which rules fire, which transfers they would start and how many bytes.
    Test {
        file: PathBuf,
        #[arg(long)]
        path: String,
        #[arg(long)]
        json: bool,
    },
    /// Per rule: what fired, what is pending or waiting for a transfer, what failed and why.
    Status {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct QosArgs {
    #[command(subcommand)]
    cmd: QosCmd,
}

#[derive(Debug, Subcommand)]
enum QosCmd {
    /// Require copies of PATH and everything below it, now and later, e.g.
    /// `weft qos add /lrz/home/alice/run1 'replicas=2 & zone != origin'`.
    Add {
        path: String,
        /// `replicas=N` (default 1) `&` a place expression over zone, resource, tier
        /// (`=`, `!=`, `&`, `|`, parentheses; `origin` is the object's zone).
        expression: String,
        #[arg(long)]
        json: bool,
    },
    /// Requirements on PATH, above it and below it, with their status:
    /// fulfilled, pending (copies on their way) or impossible (and why).
    Ls {
        path: String,
        #[arg(long)]
        json: bool,
    },
    /// Remove a requirement by id (the copies it made stay).
    Rm { id: i64 },
}

fn read(file: &PathBuf) -> Result<String> {
    std::fs::read_to_string(file).map_err(|e| Failure::usage(format!("cannot read {}: {e}", file.display())))
}

pub async fn policy(ctx: &Ctx, a: PolicyArgs) -> Result {
    match a.cmd {
        PolicyCmd::Apply { file, json } => {
            let source = read(&file)?;
            let rules = ctx
                .client
                .apply_policies(&source)
                .await
                .map_err(|e| Failure::from(e).context(file.display()))?;
            if json {
                return print_json(&rules);
            }
            for r in &rules {
                println!("loaded {}  ({}: {})", r.name, r.trigger, r.actions.join("; "));
            }
            ctx.info("see what they do with `weft policy status`");
            Ok(())
        }
        PolicyCmd::Ls { json } => {
            let rules = ctx.client.policies().await?;
            if json {
                return print_json(&rules);
            }
            for r in &rules {
                println!("{}", r.name);
                println!("  on    {}", r.trigger);
                if let Some(cond) = r.definition.get("condition") {
                    println!("  if    {}", condition_text(cond));
                }
                for a in &r.actions {
                    println!("  do    {a}");
                }
            }
            Ok(())
        }
        PolicyCmd::Rm { name } => {
            ctx.client.remove_policy(&name).await?;
            ctx.info(format!("rule {name} removed"));
            Ok(())
        }
        PolicyCmd::Test { file, path, json } => {
            let source = read(&file)?;
            let path = ctx.resolve(&path).await?;
            let tests = ctx
                .client
                .test_policies(&source, &path)
                .await
                .map_err(|e| Failure::from(e).context(file.display()))?;
            if json {
                return print_json(&tests);
            }
            for t in &tests {
                println!(
                    "{}  (on {}): {} object(s), {} match",
                    t.rule,
                    t.trigger,
                    t.objects,
                    human_bytes(t.bytes)
                );
                for a in &t.actions {
                    println!("  {}: {} object(s) would change", a.action, a.objects);
                    for tr in &a.transfers {
                        println!(
                            "    transfer to {}: {} file(s), {}",
                            tr.to,
                            tr.files,
                            human_bytes(tr.bytes)
                        );
                    }
                    for e in &a.errors {
                        println!("    cannot: {e}");
                    }
                }
            }
            Ok(())
        }
        PolicyCmd::Status { json } => {
            let status = ctx.client.policy_status().await?;
            if json {
                return print_json(&status);
            }
            println!(
                "{:<24} {:>8} {:>8} {:>8} {:>8}  last run",
                "rule", "pending", "waiting", "done", "failed"
            );
            for s in &status {
                println!(
                    "{:<24} {:>8} {:>8} {:>8} {:>8}  {}",
                    s.rule,
                    s.pending,
                    s.waiting,
                    s.done,
                    s.failed,
                    s.last_run.map_or("-".into(), |t| format_millis(t) + " UTC")
                );
                for f in &s.failures {
                    println!(
                        "  failed {} ({}, {} attempt(s)): {}",
                        f.path, f.action, f.attempts, f.error
                    );
                }
            }
            Ok(())
        }
    }
}

/// A stored condition as one line (`path=/lrz/** size>=1 MiB meta instrument=krios`).
fn condition_text(c: &serde_json::Value) -> String {
    let mut parts = Vec::new();
    if let Some(obj) = c.as_object() {
        for (k, v) in obj {
            match v {
                serde_json::Value::Null => {}
                serde_json::Value::Array(a) if a.is_empty() => {}
                serde_json::Value::String(s) => parts.push(format!("{k}={s}")),
                other => parts.push(format!("{k}={other}")),
            }
        }
    }
    if parts.is_empty() {
        "always".into()
    } else {
        parts.join(" ")
    }
}

pub async fn qos(ctx: &Ctx, a: QosArgs) -> Result {
    match a.cmd {
        QosCmd::Add {
            path,
            expression,
            json,
        } => {
            let path = ctx.resolve(&path).await?;
            let q = ctx.client.add_qos(&path, &expression).await?;
            if json {
                return print_json(&q);
            }
            println!("{}", q.id);
            ctx.info(format!(
                "requirement {} on {}: {}; follow it with `weft qos ls {}`",
                q.id, q.path, q.expression, q.path
            ));
            Ok(())
        }
        QosCmd::Ls { path, json } => {
            let path = ctx.resolve(&path).await?;
            let list = ctx.client.qos(&path).await?;
            if json {
                return print_json(&list);
            }
            for q in &list {
                println!("{:<5} {:<11} {}  {}", q.id, q.status, q.path, q.expression);
                if !q.reason.is_empty() {
                    println!("      {}", q.reason);
                }
            }
            Ok(())
        }
        QosCmd::Rm { id } => {
            ctx.client.remove_qos(id).await?;
            ctx.info(format!("requirement {id} removed"));
            Ok(())
        }
    }
}
