//! The interface's stylesheet, script and icon, embedded in the binary and served under
//! names that carry a hash of their content: a browser keeps each for a year, and a new
//! build's pages name new files.

use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use http::{header, HeaderValue, StatusCode};
use std::sync::LazyLock;

struct Asset {
    /// `web.<hash>.css`.
    name: String,
    content_type: &'static str,
    bytes: &'static [u8],
}

impl Asset {
    fn new(stem: &str, ext: &str, content_type: &'static str, bytes: &'static [u8]) -> Asset {
        let hash = blake3::hash(bytes).to_hex();
        Asset {
            name: format!("{stem}.{}.{ext}", &hash[..12]),
            content_type,
            bytes,
        }
    }
}

static ASSETS: LazyLock<[Asset; 3]> = LazyLock::new(|| {
    [
        Asset::new(
            "web",
            "css",
            "text/css; charset=utf-8",
            include_bytes!("assets/web.css"),
        ),
        Asset::new(
            "web",
            "js",
            "text/javascript; charset=utf-8",
            include_bytes!("assets/web.js"),
        ),
        Asset::new("icon", "svg", "image/svg+xml", include_bytes!("assets/icon.svg")),
    ]
});

/// The URL of the stylesheet.
pub fn css() -> String {
    format!("/assets/{}", ASSETS[0].name)
}

/// The URL of the script.
pub fn js() -> String {
    format!("/assets/{}", ASSETS[1].name)
}

/// The URL of the icon.
pub fn icon() -> String {
    format!("/assets/{}", ASSETS[2].name)
}

pub async fn serve(Path(file): Path<String>) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.name == file) else {
        return (StatusCode::NOT_FOUND, "no such asset in this build of weft").into_response();
    };
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type)),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=31536000, immutable"),
            ),
        ],
        asset.bytes,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_change_with_content() {
        let (css, js) = (super::css(), super::js());
        assert!(css.starts_with("/assets/web.") && css.ends_with(".css"), "{css}");
        assert!(js.starts_with("/assets/web.") && js.ends_with(".js"), "{js}");
        assert_ne!(css.trim_end_matches(".css"), js.trim_end_matches(".js"));
    }

    /// An unclosed block swallows every rule after it, and browsers say nothing: the pages
    /// of a merge that lost one `}` came out unstyled.
    #[test]
    fn the_stylesheet_closes_every_block() {
        let css = std::str::from_utf8(include_bytes!("assets/web.css")).expect("UTF-8");
        let mut depth = 0i32;
        for (line, text) in css.lines().enumerate() {
            depth += text.matches('{').count() as i32 - text.matches('}').count() as i32;
            assert!(depth >= 0, "a `}}` too many at line {}", line + 1);
        }
        assert_eq!(depth, 0, "a block of web.css is never closed");
    }
}
