//! `weft mkdir`, `ls`, `stat`, `rm`, `mv`, `cp`, `checksum`.

use super::output::{
    format_millis, human_bytes, print_json, report_paths, Failure, PathResult, Result, EXIT_INTEGRITY,
};
use super::Ctx;
use clap::Args;
use weft_client::wire::NodeStat;
use weft_types::LogicalPath;

#[derive(Debug, Args)]
pub struct MkdirArgs {
    /// Create missing parents; an existing collection is not an error.
    #[arg(short, long)]
    parents: bool,
    /// Print one result per path as JSON on stdout, failures included.
    #[arg(long)]
    json: bool,
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
    /// Print one result per path as JSON on stdout, failures included.
    #[arg(long)]
    json: bool,
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<String>,
}

#[derive(Debug, Args)]
pub struct MvArgs {
    /// Print the result as JSON on stdout, a failure included.
    #[arg(long)]
    json: bool,
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
    /// Print the result as JSON on stdout, a failure included.
    #[arg(long)]
    json: bool,
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
    each_path(ctx, &a.paths, a.json, |path| async move {
        ctx.client.mkdir(&path, a.parents).await?;
        Ok(())
    })
    .await
}

/// Runs `act` on each of `paths`, resolved, going on after a failure (as `rm a b` does);
/// see [`report_paths`].
async fn each_path<F, Fut>(ctx: &Ctx, paths: &[String], json: bool, act: F) -> Result
where
    F: Fn(LogicalPath) -> Fut,
    Fut: std::future::Future<Output = Result>,
{
    let (mut results, mut failures) = (Vec::new(), Vec::new());
    for p in paths {
        let (path, outcome) = match ctx.resolve(p).await {
            Ok(path) => (path.to_string(), act(path).await),
            Err(f) => (p.clone(), Err(f)),
        };
        let error = outcome.err().map(|f| {
            let e = (&f).into();
            failures.push(f);
            e
        });
        results.push(PathResult {
            path,
            from: None,
            error,
        });
    }
    report_paths(json, results, failures)
}

/// `mv` or `cp` of `src` to `dst`; see [`report_paths`].
fn report_move(json: bool, src: &LogicalPath, dst: &LogicalPath, outcome: Result) -> Result {
    let (error, failures) = match outcome {
        Ok(()) => (None, Vec::new()),
        Err(f) => (Some((&f).into()), vec![f]),
    };
    let result = PathResult {
        path: dst.to_string(),
        from: Some(src.to_string()),
        error,
    };
    report_paths(json, vec![result], failures)
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
    each_path(ctx, &a.paths, a.json, |path| async move {
        ctx.client.remove(&path, a.recursive).await?;
        Ok(())
    })
    .await
}

pub async fn mv(ctx: &Ctx, a: MvArgs) -> Result {
    let src = ctx.resolve(&a.src).await?;
    let dst = into_collection(ctx, &src, ctx.resolve(&a.dst).await?).await?;
    let outcome = ctx
        .client
        .rename(&src, &dst, false)
        .await
        .map(drop)
        .map_err(Failure::from);
    report_move(a.json, &src, &dst, outcome)
}

pub async fn cp(ctx: &Ctx, a: CpArgs) -> Result {
    let src = ctx.resolve(&a.src).await?;
    let dst = into_collection(ctx, &src, ctx.resolve(&a.dst).await?).await?;
    let outcome = ctx
        .client
        .copy(&src, &dst, a.resource.as_deref(), a.force)
        .await
        .map(drop)
        .map_err(Failure::from);
    report_move(a.json, &src, &dst, outcome)
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
