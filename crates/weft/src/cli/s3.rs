//! `weft s3 key|bucket`: access keys of the S3 gateway (each user their own) and the
//! buckets it offers (administrators declare them; every user's home is one).

use super::output::{print_json, Result};
use super::Ctx;
use clap::{Args, Subcommand};
use weft_client::wire::{NewS3Bucket, S3BucketWire, S3KeyWire};

#[derive(Debug, Args)]
pub struct S3Args {
    #[command(subcommand)]
    cmd: S3Cmd,
}

#[derive(Debug, Subcommand)]
enum S3Cmd {
    /// Access keys: a request signed with one acts as its user.
    #[command(subcommand)]
    Key(KeyCmd),
    /// Buckets: collections offered over S3.
    #[command(subcommand)]
    Bucket(BucketCmd),
}

#[derive(Debug, Subcommand)]
enum KeyCmd {
    /// Make an access key and print its secret, once.
    Create {
        /// For another user (administrators).
        #[arg(long)]
        user: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// List access keys (never their secrets).
    Ls {
        /// Another user's (administrators).
        #[arg(long, conflicts_with = "all")]
        user: Option<String>,
        /// Every user's (administrators).
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Remove an access key: requests signed with it fail from now on.
    Rm { access_key: String },
}

#[derive(Debug, Subcommand)]
enum BucketCmd {
    /// Declare a bucket over a collection (administrators).
    Add {
        /// 3-63 characters of a-z, 0-9, '.' and '-'.
        name: String,
        /// The collection, e.g. /zone/projects/climate.
        path: String,
        /// Anyone may read it without a key (grants the group `anonymous` read).
        #[arg(long)]
        public_read: bool,
        #[arg(long)]
        json: bool,
    },
    /// The buckets you may read, your home among them.
    Ls {
        #[arg(long)]
        json: bool,
    },
    /// Remove a bucket declaration (the collection and its data stay).
    Rm { name: String },
}

pub async fn s3(ctx: &Ctx, a: S3Args) -> Result {
    match a.cmd {
        S3Cmd::Key(cmd) => key(ctx, cmd).await,
        S3Cmd::Bucket(cmd) => bucket(ctx, cmd).await,
    }
}

async fn key(ctx: &Ctx, cmd: KeyCmd) -> Result {
    match cmd {
        KeyCmd::Create { user, json } => {
            let k = ctx.client.create_s3_key(user.as_deref()).await?;
            if json {
                return print_json(&k);
            }
            println!("access key:  {}", k.access_key);
            println!("secret key:  {}", k.secret_key);
            println!("user:        {}", k.user);
            println!("home bucket: {}", k.home_bucket);
            println!();
            println!("The secret is shown only now. Use the pair with any S3 client, e.g.:");
            println!(
                "  export AWS_ACCESS_KEY_ID={} AWS_SECRET_ACCESS_KEY={}",
                k.access_key, k.secret_key
            );
            println!(
                "  aws --endpoint-url http://<the zone's --s3-listen address> s3 ls s3://{}",
                k.home_bucket
            );
            Ok(())
        }
        KeyCmd::Ls { user, all, json } => {
            let keys = ctx.client.s3_keys(user.as_deref(), all).await?;
            if json {
                return print_json(&keys);
            }
            print_keys(&keys);
            Ok(())
        }
        KeyCmd::Rm { access_key } => {
            ctx.client.remove_s3_key(&access_key).await?;
            println!("access key {access_key} removed");
            Ok(())
        }
    }
}

async fn bucket(ctx: &Ctx, cmd: BucketCmd) -> Result {
    match cmd {
        BucketCmd::Add {
            name,
            path,
            public_read,
            json,
        } => {
            let path = ctx.resolve(&path).await?.to_string();
            let b = ctx
                .client
                .add_s3_bucket(&NewS3Bucket {
                    name,
                    path,
                    public_read,
                })
                .await?;
            if json {
                return print_json(&b);
            }
            let public = if b.public_read { " (public-read)" } else { "" };
            println!("bucket {} is {}{public}", b.name, b.path);
            Ok(())
        }
        BucketCmd::Ls { json } => {
            let list = ctx.client.s3_buckets().await?;
            if json {
                return print_json(&list);
            }
            print_buckets(&list);
            Ok(())
        }
        BucketCmd::Rm { name } => {
            ctx.client.remove_s3_bucket(&name).await?;
            println!("bucket {name} removed (its collection and data stay)");
            Ok(())
        }
    }
}

fn print_keys(keys: &[S3KeyWire]) {
    if keys.is_empty() {
        println!("no access keys; make one with `weft s3 key create`");
        return;
    }
    let w = keys.iter().map(|k| k.user.len()).max().unwrap_or(0);
    for k in keys {
        println!(
            "{}  {:w$}  created {}",
            k.access_key,
            k.user,
            super::output::format_millis(k.created)
        );
    }
}

fn print_buckets(list: &[S3BucketWire]) {
    let w = list.iter().map(|b| b.name.len()).max().unwrap_or(0);
    for b in list {
        let what = match (b.home, b.public_read) {
            (true, _) => "  (home)",
            (false, true) => "  (public-read)",
            (false, false) => "",
        };
        println!("{:w$}  {}{what}", b.name, b.path);
    }
}
