//! The route table: every gRPC method the server serves, with what each layer needs to
//! know of it (its path, its request's type, whether it streams, whose codec serves it).
//! `build.rs` generates [`ROUTES`] from the protos' descriptors (the API's, and gRPC's
//! health and reflection services' copies in `vendor/grpc-proto/`), so adding an RPC to
//! the proto adds its route, and every reader below agrees with the proto:
//!
//! - the connection layer finds a call's route once ([`Route::of_path`]) and carries it
//!   in the call's context (`crate::call::CallContext`);
//! - the metrics label a call by it (`crate::metrics`);
//! - the body check follows one message or a stream, and decodes the requests of the
//!   services it does not serve with our codec (`server::request_body`);
//! - our codec tells a request it cannot decode from an answer (`service::codec`).

use std::any::TypeId;

/// One gRPC method the server serves.
#[derive(Debug)]
pub struct Route {
    /// Its place in [`ROUTES`].
    pub index: usize,
    /// `/<service>/<method>`.
    pub path: &'static str,
    /// The service's full name (`allfives.v1.AllFivesService`).
    pub service: &'static str,
    /// The method's name (`Play`).
    pub method: &'static str,
    /// The request message's full name (`allfives.v1.PlayRequest`).
    pub request: &'static str,
    /// The answer message's full name.
    pub response: &'static str,
    /// The client sends a stream of requests.
    pub client_streaming: bool,
    /// The server answers a stream.
    pub server_streaming: bool,
    /// Served by a service generated with our codec (`service::codec`), which refuses
    /// an undecodable request itself; gRPC's own services come from other crates, with
    /// prost's codec built in.
    pub ours: bool,
    /// Decodes a request message of this method, keeping nothing: whether prost can.
    pub decode_request: fn(&[u8]) -> Result<(), prost::DecodeError>,
    /// The request's Rust type.
    pub request_type: fn() -> TypeId,
}

include!(concat!(env!("OUT_DIR"), "/routes.rs"));

impl Route {
    /// The route at `path` (`/<service>/<method>`), if the server serves one there.
    pub fn of_path(path: &str) -> Option<&'static Route> {
        route_index(path).map(|i| &ROUTES[i])
    }

    /// A unary call: one request, one answer.
    pub fn is_unary(&self) -> bool {
        !self.client_streaming && !self.server_streaming
    }

    /// Whether `U` is the request of one of our services' methods (a message only a
    /// client sends).
    pub fn is_our_request<U: 'static>() -> bool {
        let u = TypeId::of::<U>();
        ROUTES.iter().any(|r| r.ours && (r.request_type)() == u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;
    use prost_types::FileDescriptorSet;

    /// Every method of every service in these encoded descriptor sets, as (path,
    /// request, response, client streaming, server streaming).
    fn methods(sets: &[&[u8]]) -> Vec<(String, String, String, bool, bool)> {
        let mut all = Vec::new();
        for set in sets {
            let set = FileDescriptorSet::decode(*set).expect("a descriptor set");
            for file in &set.file {
                for service in &file.service {
                    for m in &service.method {
                        all.push((
                            format!("/{}.{}/{}", file.package(), service.name(), m.name()),
                            m.input_type().trim_start_matches('.').to_owned(),
                            m.output_type().trim_start_matches('.').to_owned(),
                            m.client_streaming(),
                            m.server_streaming(),
                        ));
                    }
                }
            }
        }
        all
    }

    fn table() -> Vec<(String, String, String, bool, bool)> {
        ROUTES
            .iter()
            .map(|r| {
                (
                    r.path.to_owned(),
                    r.request.to_owned(),
                    r.response.to_owned(),
                    r.client_streaming,
                    r.server_streaming,
                )
            })
            .collect()
    }

    #[test]
    fn the_table_is_every_method_of_the_api_and_of_the_services_served_beside_it() {
        let mut want = methods(&[crate::proto::v1::FILE_DESCRIPTOR_SET]);
        // Health and reflection as their crates serve them: the copies in
        // vendor/grpc-proto/ the table was made from are theirs.
        #[cfg(feature = "server")]
        want.extend(methods(&[
            tonic_health::pb::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1::FILE_DESCRIPTOR_SET,
            tonic_reflection::pb::v1alpha::FILE_DESCRIPTOR_SET,
        ]));
        let mut have = table();
        // The benchmark's echo is served only with `bench-echo`, and not reflected.
        have.retain(|(path, ..)| !path.starts_with("/allfives.bench."));
        want.sort();
        have.sort();
        assert_eq!(have, want);
        assert!(have.len() >= 10, "{have:?}");
    }

    #[test]
    fn a_path_finds_its_route_and_nothing_else_finds_one() {
        for (i, route) in ROUTES.iter().enumerate() {
            assert_eq!(route.index, i);
            assert_eq!(route.path, format!("/{}/{}", route.service, route.method));
            let found = Route::of_path(route.path).expect("its route");
            assert!(std::ptr::eq(found, route), "{}", route.path);
        }
        for path in [
            "",
            "/",
            "/metrics",
            "/allfives.v1.AllFivesService/Nope",
            "//Play",
            "/allfives.v1.AllFivesService/Play/",
            "allfives.v1.AllFivesService/Play",
        ] {
            assert!(Route::of_path(path).is_none(), "{path}");
        }
    }

    #[test]
    fn each_route_decodes_its_own_request_type() {
        use crate::proto::v1 as pb;
        let watch = Route::of_path("/allfives.v1.AllFivesService/Watch").expect("Watch");
        assert_eq!(watch.request, "allfives.v1.WatchRequest");
        assert_eq!((watch.request_type)(), TypeId::of::<pb::WatchRequest>());
        assert!(watch.ours && watch.server_streaming && !watch.is_unary());
        let play = Route::of_path("/allfives.v1.AllFivesService/Play").expect("Play");
        assert_eq!((play.request_type)(), TypeId::of::<pb::PlayRequest>());
        assert!(play.is_unary() && !play.server_streaming);
        // Field 1 of a PlayRequest is its token (bytes); a varint there fails.
        assert!((play.decode_request)(&[0x08, 0x01]).is_err());
        assert!((play.decode_request)(&pb::PlayRequest::default().encode_to_vec()).is_ok());
        #[cfg(feature = "server")]
        {
            let health = Route::of_path("/grpc.health.v1.Health/Watch").expect("health");
            assert_eq!(
                (health.request_type)(),
                TypeId::of::<tonic_health::pb::HealthCheckRequest>()
            );
            assert!(!health.ours);
            let reflection =
                Route::of_path("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo")
                    .expect("reflection");
            assert!(reflection.client_streaming && reflection.server_streaming);
        }
    }

    #[test]
    fn requests_are_told_from_answers() {
        use crate::proto::v1 as pb;
        assert!(Route::is_our_request::<pb::PlayRequest>());
        assert!(Route::is_our_request::<pb::NewGameRequest>());
        assert!(Route::is_our_request::<pb::WatchRequest>());
        assert!(Route::is_our_request::<pb::OpenInviteCodeRequest>());
        assert!(!Route::is_our_request::<pb::WatchResponse>());
        assert!(!Route::is_our_request::<pb::PlayResponse>());
        assert!(!Route::is_our_request::<pb::GameView>());
        #[cfg(feature = "server")]
        assert!(!Route::is_our_request::<tonic_health::pb::HealthCheckRequest>());
    }
}
