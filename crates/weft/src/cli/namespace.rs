//! `weft mkdir`, `ls`, `stat`, `rm`, `mv`, `cp`, `checksum`.

use super::output::{format_millis, human_bytes, print_json, Failure, Result, EXIT_INTEGRITY};
use super::Ctx;
use clap::Args;
use weft_client::wire::NodeStat;
use weft_types::LogicalPath;

#[derive(Debug, Args)]
pub struct MkdirArgs {
    /// Create missing parents; an existing collection is not an error.
    #[arg(short, long)]
    parents: bool,
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<String>,
}

#[derive(Debug, Args)]
pub struct LsArgs {
    /// Long listing: kind, owner, size, modification time.
    #[arg(short = 'l')]
    long: bool,
    /// Print JSON (every page).
    #[arg(long)]
    json: bool,
    /// Collection (or data object) to list [default: your home collection].
    path: Option<String>,
}

#[derive(Debug, Args)]
pub struct StatArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
    path: String,
}

#[derive(Debug, Args)]
pub struct RmArgs {
    /// Remove collections with everything below them.
    #[arg(short, long)]
    recursive: bool,
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<String>,
}

#[derive(Debug, Args)]
pub struct MvArgs {
    src: String,
    /// New path; an existing collection receives SRC under its own name.
    dst: String,
}

#[derive(Debug, Args)]
pub struct CpArgs {
    /// Resource for the copy [default: the zone's default].
    #[arg(long)]
    resource: Option<String>,
    /// Replace an existing data object.
    #[arg(short, long)]
    force: bool,
    src: String,
    /// New path; an existing collection receives SRC under its own name.
    dst: String,
}

#[derive(Debug, Args)]
pub struct ChecksumArgs {
    /// Have the zone re-read and re-hash every replica (needs own on the object).
    #[arg(long)]
    verify: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    path: String,
}

pub async fn mkdir(ctx: &Ctx, a: MkdirArgs) -> Result {
    let mut failures = Vec::new();
    for p in &a.paths {
        let r = async {
            ctx.client
                .mkdir(&ctx.resolve(p).await?, a.parents)
                .await
                .map_err(Failure::from)
        };
        if let Err(e) = r.await {
            failures.push(e);
        }
    }
    all_or_last(failures)
}

pub async fn ls(ctx: &Ctx, a: LsArgs) -> Result {
    let path = ctx.resolve(a.path.as_deref().unwrap_or("")).await?;
    let items = ctx.client.list_all(&path).await?;
    if a.json {
        return print_json(&items);
    }
    if !a.long {
        for i in &items {
            println!("{}", display_name(i));
        }
        return Ok(());
    }
    let owner_w = items.iter().map(|i| i.owner.len()).max().unwrap_or(0);
    let size_w = items.iter().map(|i| i.size.to_string().len()).max().unwrap_or(0);
    for i in &items {
        let (kind, size) = match i.kind.as_str() {
            "collection" => ('d', "-".to_owned()),
            _ => ('-', i.size.to_string()),
        };
        println!(
            "{kind}  {:owner_w$}  {size:>size_w$}  {}  {}",
            i.owner,
            format_millis(i.modified),
            display_name(i)
        );
    }
    Ok(())
}

fn display_name(i: &NodeStat) -> String {
    match i.kind.as_str() {
        "collection" => format!("{}/", i.name),
        _ => i.name.clone(),
    }
}

pub async fn stat(ctx: &Ctx, a: StatArgs) -> Result {
    let s = ctx.client.stat(&ctx.resolve(&a.path).await?).await?;
    if a.json {
        return print_json(&s);
    }
    println!("path      {}", s.path);
    println!("kind      {}", s.kind);
    if s.kind == "object" {
        println!("size      {} ({})", s.size, human_bytes(s.size));
        println!("checksum  {}", s.checksum.as_deref().unwrap_or("-"));
    }
    println!("owner     {}", s.owner);
    println!("created   {} UTC", format_millis(s.created));
    println!("modified  {} UTC", format_millis(s.modified));
    if let Some(pid) = &s.pid {
        println!("pid       {pid}");
    }
    if !s.replicas.is_empty() {
        println!("replicas");
        for r in &s.replicas {
            let verified = match r.verified {
                Some(t) => format!("verified {} UTC", format_millis(t)),
                None => "never verified".to_owned(),
            };
            println!(
                "  {}:{}  {}  {} bytes  {}  created {} UTC  {verified}",
                r.zone,
                r.resource,
                r.state,
                r.size,
                r.checksum.as_deref().unwrap_or("-"),
                format_millis(r.created)
            );
        }
    }
    Ok(())
}

pub async fn rm(ctx: &Ctx, a: RmArgs) -> Result {
    let mut failures = Vec::new();
    for p in &a.paths {
        let r = async {
            ctx.client
                .remove(&ctx.resolve(p).await?, a.recursive)
                .await
                .map_err(Failure::from)
        };
        if let Err(e) = r.await {
            failures.push(e);
        }
    }
    all_or_last(failures)
}

pub async fn mv(ctx: &Ctx, a: MvArgs) -> Result {
    let src = ctx.resolve(&a.src).await?;
    let dst = into_collection(ctx, &src, ctx.resolve(&a.dst).await?).await?;
    ctx.client.rename(&src, &dst).await?;
    Ok(())
}

pub async fn cp(ctx: &Ctx, a: CpArgs) -> Result {
    let src = ctx.resolve(&a.src).await?;
    let dst = into_collection(ctx, &src, ctx.resolve(&a.dst).await?).await?;
    ctx.client
        .copy(&src, &dst, a.resource.as_deref(), a.force)
        .await?;
    Ok(())
}

/// As `mv` and `cp` do: a destination that is an existing collection receives the source
/// under its own name.
async fn into_collection(ctx: &Ctx, src: &LogicalPath, dst: LogicalPath) -> Result<LogicalPath> {
    match ctx.client.stat(&dst).await {
        Ok(s) if s.kind == "collection" => Ok(dst.join(src.name()).map_err(|e| Failure::usage(e.message))?),
        Ok(_) => Ok(dst),
        Err(e) if e.is_not_found() => Ok(dst),
        Err(e) => Err(e.into()),
    }
}

pub async fn checksum(ctx: &Ctx, a: ChecksumArgs) -> Result {
    let path = ctx.resolve(&a.path).await?;
    let report = ctx.client.checksum(&path, a.verify).await?;
    let bad = report.checks.iter().filter(|c| !c.ok).count();
    if a.json {
        print_json(&report)?;
    } else {
        println!("{}  {}", report.checksum.as_deref().unwrap_or("-"), report.path);
        for c in &report.checks {
            let verdict = if c.ok { "ok" } else { "MISMATCH" };
            println!(
                "  {}/{}: {verdict} (computed {})",
                c.replica.zone, c.replica.resource, c.computed
            );
        }
    }
    if bad > 0 {
        return Err(Failure::new(
            EXIT_INTEGRITY,
            "checksum_mismatch",
            format!(
                "{bad} of {} replicas of {path} do not match the recorded checksum",
                report.checks.len()
            ),
        ));
    }
    Ok(())
}

/// Commands over several paths go on after a failure (as `rm a b` does); every failure
/// but the last is printed here, the last decides the exit code.
pub fn all_or_last(mut failures: Vec<Failure>) -> Result {
    let Some(last) = failures.pop() else { return Ok(()) };
    for f in &failures {
        f.print();
    }
    Err(last)
}
