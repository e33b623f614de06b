//! What users name things with (token labels, metadata) is one line of printable text: a
//! control character is refused at the API with `invalid_argument`, and what a catalog
//! holds from before is shown escaped by the web pages (still removable from them).

mod common;

use common::{code, start, TestZone};
use serde_json::json;

/// A newline (a forged line) and terminal commands (clear the screen, retitle the window).
const RAW: &str = "tidy\nforged\x1b[2J\x1b]0;owned\x07";
const ESCAPED: &str = "tidy\\nforged\\u{1b}[2J\\u{1b}]0;owned\\u{7}";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_characters_are_refused_with_invalid_argument() {
    let z = start().await;
    let t = z.admin_token.clone();
    assert_eq!(z.put_bytes("/z/home/admin/f", b"data", &t).await.status(), 201);
    let meta = "meta/z/home/admin/f";
    for bad in ["two\nlines", "esc\x1b[2J", "c1\u{85}", "del\u{7f}", "nul\0"] {
        for body in [
            json!({"op": "add", "attr": "note", "value": bad}),
            json!({"op": "set", "attr": bad, "value": "v"}),
            json!({"op": "add", "attr": "note", "value": "v", "unit": bad}),
        ] {
            let r = z.post(meta, &t).json(&body).send().await.unwrap();
            assert_eq!(code(r).await, (400, "invalid_argument".into()), "{body}");
        }
        let batch = json!({"ops": [{"op": "add", "attr": "ok", "value": "1"},
                                   {"op": "add", "attr": "note", "value": bad}]});
        let r = z
            .http
            .patch(z.api(meta))
            .bearer_auth(&t)
            .json(&batch)
            .send()
            .await
            .unwrap();
        assert_eq!(code(r).await, (400, "invalid_argument".into()), "{batch}");
        let r = z
            .post("tokens", &t)
            .json(&json!({"label": bad}))
            .send()
            .await
            .unwrap();
        assert_eq!(code(r).await, (400, "invalid_argument".into()), "{bad:?}");
    }
    let r = z
        .post("tokens", &t)
        .json(&json!({"label": "a\tb"}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (400, "invalid_argument".into()));
    let r = z
        .post("tokens", &t)
        .json(&json!({"label": "x".repeat(257)}))
        .send()
        .await
        .unwrap();
    let (status, stable, message) = common::code_of(r).await;
    assert_eq!((status, stable.as_str()), (400, "invalid_argument"));
    assert!(message.contains("256"), "{message}");
    let r = z
        .post(meta, &t)
        .json(&json!({"op": "add", "attr": "note", "value": "v".repeat(2701)}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (400, "invalid_argument".into()));
    // Nothing got in; a tab in a value does.
    assert_eq!(z.get_json(meta, &t).await, json!([]));
    let r = z
        .post(meta, &t)
        .json(&json!({"op": "add", "attr": "cols", "value": "a\tb"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
}

/// Signs in to the web interface with `token`: the session's cookies and its CSRF token.
async fn web_session(z: &TestZone, token: &str) -> (String, String) {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = browser
        .post(format!("{}/login", z.url))
        .form(&[("token", token)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    let cookies: Vec<String> = r
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|c| c.to_str().unwrap().split(';').next().unwrap().to_owned())
        .collect();
    let cookie = cookies.join("; ");
    let page = web_page(z, &cookie, "/data/z/home/admin").await;
    let csrf = page
        .split("<meta name=\"csrf-token\" content=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_owned();
    (cookie, csrf)
}

async fn web_page(z: &TestZone, cookie: &str, at: &str) -> String {
    let r = z
        .http
        .get(format!("{}{at}", z.url))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{at}");
    r.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_pages_show_control_characters_escaped() {
    let z = start().await;
    let t = z.admin_token.clone();
    assert_eq!(z.put_bytes("/z/home/admin/f", b"data", &t).await.status(), 201);
    // As an older version let them in.
    let catalog = rusqlite::Connection::open(z.data_dir.join("catalog.db")).unwrap();
    catalog.busy_timeout(std::time::Duration::from_secs(30)).unwrap();
    catalog
        .execute(
            "INSERT INTO avus (node_id, attr, value, unit) \
             SELECT id, 'raw', ?1, '' FROM nodes WHERE path = '/z/home/admin/f'",
            [RAW],
        )
        .unwrap();
    catalog.execute("UPDATE tokens SET label = ?1", [RAW]).unwrap();

    let (cookie, csrf) = web_session(&z, &t).await;
    let page = web_page(&z, &cookie, "/data/z/home/admin/f").await;
    assert!(
        page.contains(&format!("<td class=\"value\">{ESCAPED}</td>")),
        "{page}"
    );
    // Raw only where the browser sends it back to name the row (a hidden field), never
    // shown.
    assert_eq!(page.matches(RAW).count(), 1, "{page}");
    assert!(
        page.contains(&format!("name=\"value\" value=\"{RAW}\"")),
        "{page}"
    );
    let admin = web_page(&z, &cookie, "/admin").await;
    assert!(admin.contains(ESCAPED), "{admin}");
    assert!(!admin.contains('\x1b') && !admin.contains('\x07'), "{admin}");

    // And the row can be removed from the page, as shown.
    let r = z
        .http
        .post(format!("{}/meta/z/home/admin/f", z.url))
        .header("cookie", &cookie)
        .form(&[
            ("csrf", csrf.as_str()),
            ("op", "remove"),
            ("attr", "raw"),
            ("value", RAW),
            ("unit", ""),
        ])
        .send()
        .await
        .unwrap();
    assert!(
        r.status().is_success() || r.status().is_redirection(),
        "{}",
        r.status()
    );
    assert_eq!(z.get_json("meta/z/home/admin/f", &t).await, json!([]));
}
