//! `weft quota`: what a user, or a group's members together, may store.

use super::output::{human_bytes, print_json, Failure, Result};
use super::Ctx;
use clap::{Args, Subcommand};
use weft_client::wire::QuotaRequest;

#[derive(Debug, Args)]
pub struct QuotaArgs {
    #[command(subcommand)]
    cmd: QuotaCmd,
}

#[derive(Debug, Subcommand)]
enum QuotaCmd {
    /// Set the quota of a user, or of a group (its members' objects together), replacing
    /// the one it had on the same resource.
    Set {
        /// User or group.
        principal: String,
        /// Count only replicas on this resource [default: every object, wherever it is].
        #[arg(long)]
        resource: Option<String>,
        /// Bytes at most: 500G, 1.5T, 800M, 4096 (K, M, G, T, P are powers of 1024).
        #[arg(long, value_parser = parse_bytes)]
        bytes: Option<u64>,
        /// Objects at most: 1M, 250k, 1000 (k, K, M, G are powers of 1000).
        #[arg(long, value_parser = parse_count)]
        objects: Option<u64>,
    },
    /// List quotas with what they limit used now.
    Ls {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a quota.
    Rm {
        principal: String,
        /// The quota on this resource [default: the one on every resource].
        #[arg(long)]
        resource: Option<String>,
    },
}

pub async fn quota(ctx: &Ctx, a: QuotaArgs) -> Result {
    match a.cmd {
        QuotaCmd::Set {
            principal,
            resource,
            bytes,
            objects,
        } => {
            if bytes.is_none() && objects.is_none() {
                return Err(Failure::usage("give --bytes, --objects or both"));
            }
            let req = QuotaRequest {
                principal,
                resource,
                max_bytes: bytes,
                max_objects: objects,
            };
            ctx.client.set_quota(&req).await?;
            Ok(())
        }
        QuotaCmd::Rm { principal, resource } => {
            ctx.client.remove_quota(&principal, resource.as_deref()).await?;
            Ok(())
        }
        QuotaCmd::Ls { json } => {
            let list = ctx.client.quotas().await?;
            if json {
                return print_json(&list);
            }
            for q in &list {
                let on = q
                    .resource
                    .as_deref()
                    .map_or("all resources".to_owned(), |r| format!("resource {r}"));
                let held = match q.reserved_bytes {
                    0 => String::new(),
                    n => format!(" (+{} held by open uploads)", human_bytes(n)),
                };
                let bytes = q.max_bytes.map_or("-".to_owned(), |m| {
                    format!("{}{held} of {}", human_bytes(q.used_bytes), human_bytes(m))
                });
                let objects = q
                    .max_objects
                    .map_or("-".to_owned(), |m| format!("{} of {m}", q.used_objects));
                println!(
                    "{} ({})  {on}  bytes: {bytes}  objects: {objects}",
                    q.principal, q.kind
                );
            }
            Ok(())
        }
    }
}

/// `500G`, `1.5T`, `4096`: K, M, G, T, P are powers of 1024 (with an optional `iB`/`B`).
pub(crate) fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    scaled(s, 1024, &["iB", "B"])
}

/// `1M`, `250k`, `1000`: k/K, M, G are powers of 1000.
fn parse_count(s: &str) -> std::result::Result<u64, String> {
    scaled(s, 1000, &[])
}

fn scaled(s: &str, base: u64, suffixes: &[&str]) -> std::result::Result<u64, String> {
    let t = s.trim();
    let t = suffixes.iter().find_map(|suf| t.strip_suffix(suf)).unwrap_or(t);
    let (num, exp) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let exp = match c.to_ascii_uppercase() {
                'K' => 1,
                'M' => 2,
                'G' => 3,
                'T' => 4,
                'P' => 5,
                _ => return Err(format!("{s:?}: unknown unit {c:?}")),
            };
            (&t[..i], exp)
        }
        _ => (t, 0),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number with an optional unit"))?;
    let v = n * (base as f64).powi(exp);
    if !(v.is_finite() && v >= 0.0 && v <= u64::MAX as f64 && v.fract() == 0.0) {
        return Err(format!("{s:?} is not a whole, non-negative amount"));
    }
    Ok(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_with_units() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("500G"), Ok(500 << 30));
        assert_eq!(parse_bytes("1.5T"), Ok(3 << 39));
        assert_eq!(parse_bytes("2GiB"), Ok(2 << 30));
        assert_eq!(parse_bytes("800M"), Ok(800 << 20));
        assert_eq!(parse_count("1M"), Ok(1_000_000));
        assert_eq!(parse_count("250k"), Ok(250_000));
        for bad in ["", "x", "-1", "1.5", "3Q", "1e400G"] {
            assert!(parse_count(bad).is_err() && parse_bytes(bad).is_err(), "{bad}");
        }
    }
}
