//! The login page: the zone's OIDC issuers' buttons, if any, and the API token form.

use super::layout;
use axum::response::Html;
use maud::html;

/// `issuers`: the index and label of each OIDC issuer the web can sign in with.
pub fn login(
    zone: &str,
    next: Option<&str>,
    issuers: &[(usize, &str)],
    problem: Option<&str>,
) -> Html<String> {
    let main = html! {
        section.login {
            h1 { "Sign in to zone " span.mono { (zone) } }
            @if let Some(p) = problem {
                p.alert role="alert" { (p) }
            }
            @if !issuers.is_empty() {
                div.sso {
                    @for (n, label) in issuers {
                        @let href = match next {
                            Some(next) => format!(
                                "/login/oidc/{n}?{}",
                                form_urlencoded::Serializer::new(String::new()).append_pair("next", next).finish()
                            ),
                            None => format!("/login/oidc/{n}"),
                        };
                        a.button.primary href=(href) { "Sign in with " (label) }
                    }
                }
                p.or { span { "or with an API token" } }
            }
            form method="post" action="/login" {
                @if let Some(n) = next {
                    input type="hidden" name="next" value=(n);
                }
                label for="token" { "API token" }
                input #token type="password" name="token" autocomplete="off" required autofocus
                    spellcheck="false" placeholder="weft_…";
                p.hint { "Create one with " code { "weft token create" } "; it stays on the zone, your browser keeps only a session." }
                // The issuers' buttons lead when there are any.
                button.primary[issuers.is_empty()] type="submit" { "Sign in" }
            }
        }
    };
    layout("Sign in", None, zone, main)
}
