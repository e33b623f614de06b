//! `weft login`, `weft whoami`, `weft token`.

use super::config::{self, ConfigFile};
use super::output::{format_millis, print_json, Failure, Result};
use super::Ctx;
use clap::{Args, Subcommand};
use std::io::{BufRead, IsTerminal, Write};
use weft_client::wire::{TokenRequest, TokenWire};
use weft_client::Client;
use weft_types::escape_controls;

#[derive(Debug, Args)]
pub struct LoginArgs {
    /// The zone's address, e.g. https://zone.example.org:8640.
    pub url: String,
    /// API token. Left out, it is read from stdin (which keeps it out of shell history).
    #[arg(long)]
    pub token: Option<String>,
    /// PEM file of the CA that signed the zone's certificate, when it is not a system root;
    /// saved with the URL and token.
    #[arg(long, env = "WEFT_CA_FILE", value_name = "FILE")]
    pub ca_file: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct WhoamiArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    cmd: TokenCmd,
}

#[derive(Debug, Subcommand)]
enum TokenCmd {
    /// Issue a new API token. The token alone is printed on stdout; it is shown only once.
    Create {
        /// The user the token is for (default: you; others need an administrator).
        #[arg(long)]
        user: Option<String>,
        /// Lifetime in seconds (default: until deleted).
        #[arg(long, value_name = "SECONDS")]
        ttl: Option<u64>,
        /// A label to recognise the token by.
        #[arg(long, default_value = "")]
        label: String,
    },
    /// List tokens, newest first: yours (an administrator's: everyone's). The secrets are
    /// not kept, so they are not shown.
    Ls {
        #[arg(long)]
        json: bool,
    },
    /// Delete tokens by id (from `weft token ls`): requests and web sessions with them fail
    /// from now on.
    Rm {
        #[arg(required = true)]
        ids: Vec<i64>,
    },
}

/// Checks the token with `GET /whoami` before saving, so a typo is caught now rather than
/// at the next command.
pub async fn login(a: LoginArgs, quiet: bool) -> Result {
    let token = match a.token {
        Some(t) => t,
        None => read_token()?,
    };
    let token = token.trim().to_owned();
    if token.is_empty() {
        return Err(Failure::usage("the token is empty"));
    }
    // Saved absolute, so that later commands find it from any directory.
    let ca_file = match a.ca_file.filter(|f| !f.as_os_str().is_empty()) {
        Some(f) => {
            Some(std::path::absolute(&f).map_err(|e| Failure::usage(format!("{}: {e}", f.display())))?)
        }
        None => None,
    };
    let cas = super::trusted_cas(ca_file.as_deref())?;
    let client = Client::with_cas(&a.url, Some(token.clone()), &cas)?;
    let me = client.whoami().await?;
    let path = config::path()?;
    config::save(
        &path,
        &ConfigFile {
            url: Some(client.zone_urls()),
            token: Some(token),
            ca_file,
        },
    )?;
    if !quiet {
        eprintln!(
            "logged in to {} (zone {}) as {}; saved in {}",
            client.zone_urls(),
            me.zone,
            me.user,
            path.display()
        );
    }
    Ok(())
}

fn read_token() -> Result<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("token: ");
        let _ = std::io::stderr().flush();
    }
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .map_err(|e| Failure::usage(format!("cannot read the token from stdin: {e}")))?;
    Ok(line)
}

pub async fn whoami(ctx: &Ctx, a: WhoamiArgs) -> Result {
    let me = ctx.client.whoami().await?;
    if a.json {
        return print_json(&me);
    }
    println!("user    {}", me.user);
    println!("zone    {}", me.zone);
    println!("admin   {}", if me.admin { "yes" } else { "no" });
    println!("home    {}", me.home);
    let groups = if me.groups.is_empty() {
        "-".to_owned()
    } else {
        me.groups.join(", ")
    };
    println!("groups  {groups}");
    Ok(())
}

pub async fn token(ctx: &Ctx, a: TokenArgs) -> Result {
    match a.cmd {
        TokenCmd::Create { user, ttl, label } => {
            let created = ctx
                .client
                .create_token(&TokenRequest {
                    user,
                    label,
                    ttl_seconds: ttl,
                })
                .await?;
            let expiry = match created.expires {
                Some(ms) => format!("expires {} UTC", format_millis(ms)),
                None => "does not expire".into(),
            };
            ctx.info(format!(
                "new token for {} ({expiry}); it is shown only this once:",
                created.user
            ));
            println!("{}", created.token);
            Ok(())
        }
        TokenCmd::Ls { json } => {
            let tokens = ctx.client.tokens().await?;
            if json {
                return print_json(&tokens);
            }
            print_tokens(&tokens);
            Ok(())
        }
        TokenCmd::Rm { ids } => {
            for id in ids {
                ctx.client.delete_token(id).await?;
                ctx.info(format!("token {id} deleted"));
            }
            Ok(())
        }
    }
}

fn print_tokens(tokens: &[TokenWire]) {
    let w = tokens.iter().map(|t| t.user.len()).max().unwrap_or(0);
    let id = tokens.iter().map(|t| t.id.to_string().len()).max().unwrap_or(0);
    for t in tokens {
        let expires = match t.expires {
            Some(ms) => format!("expires {}", format_millis(ms)),
            None => "no expiry".into(),
        };
        let label = if t.label.is_empty() {
            String::new()
        } else {
            format!("  {}", t.label)
        };
        // Labels given before control characters were refused may still hold them.
        let line = format!(
            "{:>id$}  {:w$}  created {}  {expires}{label}",
            t.id,
            t.user,
            format_millis(t.created)
        );
        println!("{}", escape_controls(&line));
    }
}
