//! `weft demo`: two federated zones on loopback, sample data in one, a managed transfer to
//! the other, then what to try next. Everything a newcomer sees goes through the same REST
//! API and client the real commands use; only the two zones share this process.

use crate::cli::progress::Bar;
use anyhow::Context;
use bytes::Bytes;
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use weft_client::wire::{AclRequest, NewPeerZone, TransferRequest, TransferWire};
use weft_client::{Client, MoveOptions};
use weft_types::{LogicalPath, ZoneName};
use weft_zone::{Zone, ZoneConfig};

/// The sample: one large file (moved as parallel pieces) and many small ones.
const LARGE: usize = 64 << 20;
const SMALL: usize = 256 << 10;
const SMALL_COUNT: usize = 100;

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where the two zones keep their data [default: a new directory under /tmp].
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Stop both zones once the transfer has ended instead of running until Ctrl-C.
    #[arg(long)]
    exit: bool,
}

struct Running {
    name: &'static str,
    url: String,
    /// The zone's S3 gateway.
    s3_url: String,
    token_file: PathBuf,
    client: Client,
}

pub async fn run(args: DemoArgs, quiet: bool) -> anyhow::Result<()> {
    let dir = match args.dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("weft-demo-{}", std::process::id())),
    };
    if dir.join("lrz").exists() || dir.join("it4i").exists() {
        anyhow::bail!(
            "{} already holds a demo; remove it or pass another --dir",
            dir.display()
        );
    }
    let say = |line: String| {
        if !quiet {
            eprintln!("{line}");
        }
    };
    say(format!("starting zones lrz and it4i in {}", dir.display()));
    let lrz = start_zone("lrz", &dir).await?;
    let it4i = start_zone("it4i", &dir).await?;

    // Federation, as two administrators would do it: the same secret on both sides.
    let secret = random_hex(32)?;
    for (here, there) in [(&lrz, &it4i), (&it4i, &lrz)] {
        here.client
            .add_zone(&NewPeerZone {
                name: there.name.into(),
                url: there.url.clone(),
                secret: secret.clone(),
                replace: false,
                insecure: false,
            })
            .await
            .with_context(|| format!("federating {} with {}", here.name, there.name))?;
    }
    // lrz's admin is the visitor admin#lrz at it4i: it4i grants it a collection.
    let incoming = LogicalPath::parse("/it4i/incoming")?;
    it4i.client.mkdir(&incoming, false).await?;
    it4i.client
        .set_acl(
            &incoming,
            &AclRequest {
                principal: "admin#lrz".into(),
                permission: "write".into(),
                recursive: true,
            },
        )
        .await?;
    say("federated lrz and it4i; it4i lets admin#lrz write /it4i/incoming".into());

    let sample = LogicalPath::parse("/lrz/home/admin/sample")?;
    put_sample(&lrz.client, &sample).await?;
    say(format!(
        "put the sample in lrz: {sample} (1 × {} MiB and {SMALL_COUNT} × {} KiB)",
        LARGE >> 20,
        SMALL >> 10
    ));

    let t = lrz
        .client
        .start_transfer(&TransferRequest {
            sources: vec![sample.to_string()],
            destination: incoming.to_string(),
            recursive: true,
            sync: false,
            verify: None,
            streams: None,
            concurrency: None,
        })
        .await?;
    say(format!(
        "transfer {} started: lrz moves the bytes to it4i itself",
        t.id
    ));
    let t = follow(&lrz.client, t, quiet).await?;
    let secs = match (t.started, t.finished) {
        (Some(a), Some(b)) => (b - a).max(1) as f64 / 1000.0,
        _ => f64::NAN,
    };
    println!(
        "transfer {} {}: {} files, {:.1} MiB in {secs:.2} s ({:.0} MiB/s), {} attempts",
        t.id,
        t.state,
        t.files_done,
        t.bytes_done as f64 / (1 << 20) as f64,
        t.bytes_done as f64 / (1 << 20) as f64 / secs,
        t.attempts
    );
    if t.state != "succeeded" {
        anyhow::bail!("the demo transfer {}: {}", t.state, t.error.unwrap_or_default());
    }
    if args.exit {
        println!("--exit: both zones stop now; without it they keep running for you to explore.");
        return Ok(());
    }
    print_next_steps(&lrz, &it4i, &t.id);
    println!(
        "Press Ctrl-C to stop both zones (their data stays in {}).",
        dir.display()
    );
    crate::serve::shutdown_signal().await;
    Ok(())
}

async fn start_zone(name: &'static str, dir: &Path) -> anyhow::Result<Running> {
    let config = ZoneConfig::new(ZoneName::parse(name)?, dir.join(name));
    let (zone, boot) = Zone::open(config)
        .await
        .map_err(|e| anyhow::anyhow!("cannot open zone {name}: {e}"))?;
    let token_file = boot
        .admin_token_file
        .context("a new zone writes its admin token")?;
    let token = std::fs::read_to_string(&token_file)?.trim().to_owned();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    let s3_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let s3_url = format!("http://{}", s3_listener.local_addr()?);
    let s3 =
        weft_api::s3::router(zone.clone(), None)?.into_make_service_with_connect_info::<weft_api::PeerAddr>();
    let app = weft_api::router(zone, vec![]).into_make_service_with_connect_info::<weft_api::PeerAddr>();
    tokio::spawn(async move {
        let _ = axum::serve(weft_api::no_delay(listener), app).await;
    });
    tokio::spawn(async move {
        let _ = axum::serve(weft_api::no_delay(s3_listener), s3).await;
    });
    Ok(Running {
        name,
        client: Client::new(&url, Some(token))?,
        url,
        s3_url,
        token_file,
    })
}

/// Writes the sample tree with pseudo-random bytes (they neither compress nor repeat).
async fn put_sample(client: &Client, root: &LogicalPath) -> anyhow::Result<()> {
    let frames = root.join("frames")?;
    client.mkdir(&frames, true).await?;
    let opts = MoveOptions::default();
    client
        .put_bytes(pseudo_random(LARGE, 1), &root.join("climate.nc")?, &opts)
        .await?;
    let puts = (0..SMALL_COUNT).map(|i| {
        let path = frames.join(&format!("frame-{i:04}.tif"));
        let opts = &opts;
        async move {
            client
                .put_bytes(pseudo_random(SMALL, i as u64 + 2), &path?, opts)
                .await
                .map_err(anyhow::Error::from)
        }
    });
    use futures::StreamExt;
    let results: Vec<anyhow::Result<_>> = futures::stream::iter(puts).buffer_unordered(8).collect().await;
    results.into_iter().try_for_each(|r| r.map(drop))
}

/// Polls the transfer to its end, with a progress bar on a terminal.
async fn follow(client: &Client, mut t: TransferWire, quiet: bool) -> anyhow::Result<TransferWire> {
    let bar: Arc<Bar> = Bar::new(t.bytes_total, t.files_total, quiet);
    while matches!(t.state.as_str(), "queued" | "active") {
        bar.set(t.bytes_done, t.files_done + t.files_skipped + t.files_failed);
        tokio::time::sleep(Duration::from_millis(200)).await;
        t = client.transfer(&t.id).await?;
    }
    bar.finish();
    Ok(t)
}

fn print_next_steps(lrz: &Running, it4i: &Running, id: &str) {
    println!();
    println!("Two federated zones are running:");
    for z in [lrz, it4i] {
        println!(
            "  {:5} {}   S3 {}   admin token in {}",
            z.name,
            z.url,
            z.s3_url,
            z.token_file.display()
        );
    }
    println!();
    println!("Try, in another terminal:");
    println!(
        "  export WEFT_URL={} WEFT_TOKEN=$(cat {})",
        lrz.url,
        lrz.token_file.display()
    );
    println!("  weft zone ls                                  # the peer zone and its round trip");
    println!("  weft ls -l /it4i/incoming/sample              # it4i's namespace, through lrz");
    println!("  weft stat /it4i/incoming/sample/climate.nc    # where the replicas are, and the checksum");
    println!("  weft transfer show {id}    # per-file state, attempts, rate");
    println!("  weft transfer start -r --sync sample /it4i/incoming --wait   # nothing differs: all skipped");
    println!("  weft transfer start --dry-run -r /it4i/incoming/sample /lrz/home/admin/back");
    println!("  weft s3 key create                            # an access key for S3 clients, then:");
    println!(
        "  aws --endpoint-url {} s3 ls s3://home-admin/sample/",
        lrz.s3_url
    );
}

pub(crate) fn random_hex(bytes: usize) -> anyhow::Result<String> {
    use std::io::Read;
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

fn pseudo_random(len: usize, seed: u64) -> Bytes {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    Bytes::from(out)
}
