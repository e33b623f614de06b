//! `weft zone status|add|ls|rm`: this zone's state, and the zones federated with it.

use super::output::{format_millis, print_json, Failure, Result};
use super::Ctx;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use weft_client::wire::{NewPeerZone, PeerZoneWire, UserMapWire};

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
    /// Federate with another zone (admin). Run it on both zones with the same secret, e.g.
    /// made once with `openssl rand -hex 32 > shared.secret`.
    Add {
        /// The other zone's name.
        name: String,
        /// The other zone's address, e.g. https://it4i.example.org:8640.
        url: String,
        /// File holding the shared secret (at least 32 bytes). It is read here and stored
        /// by this zone; zones never send it to each other.
        #[arg(long)]
        secret_file: PathBuf,
        /// Update the address and secret of a zone already federated.
        #[arg(long)]
        replace: bool,
        /// Accept a plain http:// URL to a host that is not loopback. Zone tokens and data
        /// then cross the network in clear: only for a network you trust end to end.
        #[arg(long)]
        insecure: bool,
        #[arg(long)]
        json: bool,
    },
    /// List the federated zones and whether each answers now.
    Ls {
        #[arg(long)]
        json: bool,
    },
    /// End the federation with a zone (admin); its paths are no longer reachable from here.
    Rm { name: String },
    /// Let a user of another zone act here as a local user (admin), instead of as the
    /// visitor USER#ZONE: e.g. `weft zone map lrz alice alice` on it4i.
    Map {
        zone: String,
        /// The user's name in its own zone.
        remote_user: String,
        /// A plain local user (not an administrator).
        local_user: String,
    },
    /// End a mapping: the user is the visitor USER#ZONE again.
    Unmap { zone: String, remote_user: String },
    /// List the users of a zone mapped to local users.
    Maps {
        zone: String,
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
                    "  {:w$}  {:5}  runs {}  items {}  last run {last}{error}",
                    worker.name, worker.state, worker.runs, worker.items
                );
            }
            Ok(())
        }
        ZoneCmd::Add {
            name,
            url,
            secret_file,
            replace,
            insecure,
            json,
        } => {
            let secret = std::fs::read_to_string(&secret_file).map_err(|e| {
                Failure::usage(format!(
                    "cannot read the secret file {}: {e}",
                    secret_file.display()
                ))
            })?;
            let z = ctx
                .client
                .add_zone(&NewPeerZone {
                    name,
                    url,
                    secret: secret.trim().to_owned(),
                    replace,
                    insecure,
                })
                .await?;
            if json {
                return print_json(&z);
            }
            println!("federated with zone {} at {}", z.name, z.url);
            if !z.reachable {
                println!(
                    "  not reachable yet ({}); paths /{}/... work once it answers and has added this zone too",
                    z.error.as_deref().unwrap_or("no answer"),
                    z.name
                );
            }
            Ok(())
        }
        ZoneCmd::Ls { json } => {
            let zones = ctx.client.zones().await?;
            if json {
                return print_json(&zones);
            }
            print_zones(&zones);
            Ok(())
        }
        ZoneCmd::Map {
            zone,
            remote_user,
            local_user,
        } => {
            let map = UserMapWire {
                remote_user,
                local_user,
            };
            ctx.client.map_user(&zone, &map).await?;
            println!(
                "{} of zone {zone} now acts here as {}",
                map.remote_user, map.local_user
            );
            Ok(())
        }
        ZoneCmd::Unmap { zone, remote_user } => {
            ctx.client.unmap_user(&zone, &remote_user).await?;
            println!("{remote_user} of zone {zone} acts here as {remote_user}#{zone} again");
            Ok(())
        }
        ZoneCmd::Maps { zone, json } => {
            let maps = ctx.client.user_maps(&zone).await?;
            if json {
                return print_json(&maps);
            }
            if maps.is_empty() {
                println!("no users of zone {zone} are mapped; each acts as USER#{zone}");
            }
            for m in &maps {
                println!("{}#{zone} -> {}", m.remote_user, m.local_user);
            }
            Ok(())
        }
        ZoneCmd::Rm { name } => {
            ctx.client.remove_zone(&name).await?;
            println!("zone {name} is no longer federated");
            Ok(())
        }
    }
}

fn print_zones(zones: &[PeerZoneWire]) {
    if zones.is_empty() {
        println!("no federated zones; add one with `weft zone add NAME URL --secret-file FILE`");
        return;
    }
    let w = zones.iter().map(|z| z.name.len()).max().unwrap_or(0);
    let u = zones.iter().map(|z| z.url.len()).max().unwrap_or(0);
    for z in zones {
        let state = match (z.reachable, z.rtt_ms) {
            (true, Some(ms)) => format!(
                "reachable  {ms:.1} ms  weft {}",
                z.version.as_deref().unwrap_or("?")
            ),
            _ => format!("UNREACHABLE  {}", z.error.as_deref().unwrap_or("")),
        };
        println!("{:w$}  {:u$}  {state}", z.name, z.url);
    }
}
