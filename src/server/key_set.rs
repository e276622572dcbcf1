//! Layer 2 of the stack (`stack.rs`): `GET /.well-known/jwks.json` on the API port
//! answers the result keys' JWK Set (what `GetResultKeys` answers), the way identity
//! providers publish theirs, so a ranking server fetches it with any JOSE library's
//! key-set client. Every other request goes on to the gRPC layers.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http_body::Body as HttpBody;
use tonic::body::Body;
use tonic::codegen::http::{HeaderValue, Method, Request, Response, StatusCode, header};
use tonic::codegen::{Bytes, StdError};
use tower::Service;

/// Where the key set is served.
pub const PATH: &str = "/.well-known/jwks.json";

/// How long a verifier may cache the key set: an hour, as identity providers do
/// (docs/security.md's rotation waits this long between publishing a key and signing
/// with it).
pub const CACHE_CONTROL: &str = "public, max-age=3600";

/// Answers the key set at [`PATH`]; passes everything else to `inner`.
#[derive(Clone)]
pub struct KeySet<S> {
    pub inner: S,
    /// The key set as JSON.
    pub json: String,
}

impl<S, ResBody> Service<Request<Body>> for KeySet<S>
where
    S: Service<Request<Body>, Response = Response<ResBody>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ResBody: HttpBody<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<StdError>,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        if request.uri().path() != PATH {
            let response = self.inner.call(request);
            return Box::pin(async move { Ok(response.await?.map(Body::new)) });
        }
        let response = key_set(request.method(), &self.json);
        Box::pin(std::future::ready(Ok(response)))
    }
}

/// The answer to `method` at [`PATH`]: the set to GET (HEAD: its headers), 405 else.
fn key_set(method: &Method, json: &str) -> Response<Body> {
    let mut response = Response::new(Body::empty());
    if method != Method::GET && method != Method::HEAD {
        *response.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
        let allow = HeaderValue::from_static("GET, HEAD");
        response.headers_mut().insert(header::ALLOW, allow);
        return response;
    }
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(CACHE_CONTROL),
    );
    // Public keys, for verifiers on any origin (a browser page too).
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(json.len()));
    if method == Method::GET {
        *response.body_mut() = Body::new(json.to_owned());
    }
    response
}
