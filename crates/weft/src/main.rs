//! The weft binary: `weft serve` runs a zone; every other command is a client of a zone's
//! REST API (see `cli`).

mod cli;
mod demo;
mod key;
mod memory;
mod serve;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

const LONG_ABOUT: &str = "\
weft: federated data infrastructure. One binary runs a zone (`weft serve`) and talks to one.

The client commands find their zone in WEFT_URL and WEFT_TOKEN, or else in the file
`weft login URL --token T` saves ($XDG_CONFIG_HOME/weft/config.toml). A zone of several
servers is given as their URLs separated by commas (WEFT_URL=https://a:8640,https://b:8640):
requests move on to the next one when a server cannot be reached or answers 503. Over https, the
zone's certificate must chain to a system root or to a CA in WEFT_CA_FILE (or the file
`weft login URL --ca-file FILE` saves). Logical paths not starting with / are relative to
your home collection (/<zone>/home/<user>).";

#[derive(Debug, Parser)]
#[command(name = "weft", version, about = "weft: federated data infrastructure", long_about = LONG_ABOUT)]
#[command(after_long_help = cli::output::EXIT_CODES_HELP)]
struct Cli {
    #[command(flatten)]
    global: cli::Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a zone: catalog, resources and the REST API.
    Serve(serve::ServeArgs),
    /// Start two federated zones on loopback, put sample data in one and transfer it to
    /// the other; then print what to try next.
    Demo(demo::DemoArgs),
    /// The key file that seals a zone's secrets (run beside the zone).
    Key(key::KeyArgs),
    #[command(flatten)]
    Client(cli::Command),
}

fn main() -> ExitCode {
    memory::keep_freed_memory();
    weft_zone::failpoints::setup();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("weft: error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        Command::Serve(args) => match runtime.block_on(serve::run(args)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("weft: error: {e:#}");
                ExitCode::FAILURE
            }
        },
        Command::Key(args) => match key::run(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("weft: error: {e:#}");
                ExitCode::FAILURE
            }
        },
        Command::Demo(args) => {
            init_client_logging();
            match runtime.block_on(demo::run(args, cli.global.quiet)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("weft: error: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Client(cmd) => {
            init_client_logging();
            match runtime.block_on(cli::run(cli.global, cmd)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(f) => {
                    f.print();
                    ExitCode::from(f.exit)
                }
            }
        }
    }
}

/// Client commands log only warnings (e.g. a piece sent again) unless `WEFT_LOG` asks for
/// more; `serve` sets up its own logging.
fn init_client_logging() {
    // fuser warns of the unmount it tries after the kernel's own (`weft mount`).
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("WEFT_LOG").unwrap_or_else(|_| "warn,fuser=error".into());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .without_time()
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn put_takes_sources_then_a_destination() {
        let c = Cli::try_parse_from(["weft", "put", "-r", "a", "b", "/z/dest"]).unwrap();
        let Command::Client(cli::Command::Put(p)) = c.command else {
            panic!()
        };
        assert!(format!("{p:?}").contains("\"/z/dest\""));
        assert!(Cli::try_parse_from(["weft", "put", "a"]).is_err());
        assert!(Cli::try_parse_from(["weft", "put", "--streams", "0", "a", "b"]).is_err());
    }
}
