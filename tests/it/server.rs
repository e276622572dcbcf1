//! The server around the API: health, reflection, gRPC-Web over HTTP/1.1, shutdown.

use crate::common;

use allfives::proto::v1 as pb;
use common::{TestServer, hot_seat, ring};
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

#[tokio::test]
async fn health_reports_serving_for_the_server_and_the_api() {
    let server = TestServer::start(ring(1, 7)).await;
    let mut health = HealthClient::new(server.channel().await);
    for service in ["", "allfives.v1.AllFivesService"] {
        let status = health
            .check(HealthCheckRequest {
                service: service.to_string(),
            })
            .await
            .expect("health check")
            .into_inner()
            .status;
        assert_eq!(status, ServingStatus::Serving as i32, "service {service:?}");
    }
}

/// The services a reflection client of protocol module `$pb` lists (v1 and v1alpha
/// are the same protocol under two generated modules).
macro_rules! list_services {
    ($pb:path, $channel:expr) => {{
        use $pb as pb;
        let mut client = pb::server_reflection_client::ServerReflectionClient::new($channel);
        let request = pb::ServerReflectionRequest {
            host: String::new(),
            message_request: Some(pb::server_reflection_request::MessageRequest::ListServices(
                String::new(),
            )),
        };
        let mut answers = client
            .server_reflection_info(tokio_stream::iter([request]))
            .await
            .expect("reflection")
            .into_inner();
        let answer = answers
            .message()
            .await
            .expect("answer")
            .expect("one answer");
        match answer.message_response {
            Some(pb::server_reflection_response::MessageResponse::ListServicesResponse(l)) => l
                .service
                .into_iter()
                .map(|s| s.name)
                .collect::<Vec<String>>(),
            other => panic!("{other:?}"),
        }
    }};
}

async fn listed_services(server: &TestServer, v1alpha: bool) -> Vec<String> {
    let channel = server.channel().await;
    if v1alpha {
        list_services!(tonic_reflection::pb::v1alpha, channel)
    } else {
        list_services!(tonic_reflection::pb::v1, channel)
    }
}

#[tokio::test]
async fn reflection_lists_the_service_in_both_protocol_versions() {
    let server = TestServer::start(ring(1, 7)).await;
    for v1alpha in [false, true] {
        let services = listed_services(&server, v1alpha).await;
        assert!(
            services.iter().any(|s| s == "allfives.v1.AllFivesService"),
            "v1alpha={v1alpha}: {services:?}"
        );
        assert!(
            services.iter().any(|s| s == "grpc.health.v1.Health"),
            "{services:?}"
        );
    }
}

/// One gRPC-Web call over plain HTTP/1.1, as a browser would make it.
#[tokio::test]
async fn a_grpc_web_call_over_http1_works() {
    let server = TestServer::start(ring(1, 7)).await;
    // A hot-seat match (the viewer must be a seat claimed in the call).
    let request = pb::NewGameRequest {
        viewer: Some(0),
        ..hot_seat(pb::Rules::default(), Some(3))
    };
    let message = request.encode_to_vec();
    let mut body = vec![0u8];
    body.extend_from_slice(&(message.len() as u32).to_be_bytes());
    body.extend_from_slice(&message);
    let head = format!(
        "POST /allfives.v1.AllFivesService/NewGame HTTP/1.1\r\nHost: {}\r\n\
         Content-Type: application/grpc-web+proto\r\nX-Grpc-Web: 1\r\n\
         Origin: http://example.test\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        server.addr,
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(server.addr)
        .await
        .expect("connect");
    stream.write_all(head.as_bytes()).await.expect("write");
    stream.write_all(&body).await.expect("write");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.expect("read");
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.to_ascii_lowercase()
            .contains("access-control-allow-origin"),
        "CORS: {text}"
    );
    assert!(
        text.contains("grpc-status:0"),
        "the trailer frame reports OK: {text}"
    );
    // The data frame holds a NewGameResponse with a state token and a view.
    let data_at = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("headers end")
        + 4;
    let body = &response[data_at..];
    let frame = find_data_frame(body).expect("a data frame");
    let answer = pb::NewGameResponse::decode(frame).expect("decodes");
    assert!(!answer.state.is_empty());
    assert_eq!(answer.view.and_then(|v| v.viewer), Some(0));
    let seats: Vec<u32> = answer.credentials.iter().map(|c| c.seat).collect();
    assert_eq!(seats, vec![0, 1], "a credential for every seat claimed");
    assert!(answer.credentials.iter().all(|c| c.credential.len() == 16));
}

/// The first gRPC-Web data frame (flag 0x00) in a body that may be chunked.
fn find_data_frame(body: &[u8]) -> Option<&[u8]> {
    (0..body.len().saturating_sub(5)).find_map(|i| {
        if body[i] != 0 {
            return None;
        }
        let len = u32::from_be_bytes(body[i + 1..i + 5].try_into().ok()?) as usize;
        let frame = body.get(i + 5..i + 5 + len)?;
        pb::NewGameResponse::decode(frame)
            .ok()
            .filter(|r| !r.state.is_empty())
            .map(|_| frame)
    })
}

#[tokio::test]
async fn the_server_stops_on_its_shutdown_signal() {
    let mut server = TestServer::start(ring(1, 7)).await;
    let mut client = server.client().await;
    client
        .new_game(pb::NewGameRequest::default())
        .await
        .expect("serves");
    server.stop();
    let finished =
        tokio::time::timeout(std::time::Duration::from_secs(5), &mut server.handle).await;
    assert!(
        finished.is_ok(),
        "the server exits after its shutdown signal"
    );
}
