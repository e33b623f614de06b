//! What every answer of the S3 listener carries ([`crate::sandboxed`]). An object is
//! served with the type its uploader stored (or a presigned URL's `response-content-type`),
//! `text/html` included, from this zone's host: cookies ignore ports, so a stored page's
//! script could plant a cookie of the web interface's session name (`web/session.rs`).
//! S3 clients read neither header, and a browser still shows images, text and media. No
//! `Content-Disposition` is forced: S3 clients expect the one stored with the object.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

pub async fn sandbox(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    crate::sandboxed(resp.headers_mut());
    resp
}
