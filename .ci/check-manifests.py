#!/usr/bin/env python3
"""Checks the rendered Kubernetes manifests (`kubectl kustomize deploy/k8s`) for what
the schemas cannot see:

- the Gateway API objects, which kubernetes-validate has no schema for: the required
  fields of the Gateway and the GRPCRoute, and that the route attaches to a listener
  that exists and admits it, routes allfives.v1.AllFivesService, and sends it to a
  Service port that speaks h2c;
- the objects agreeing with each other (selectors, named ports, the key file path);
- what docs/operations.md promises of the pods (replicas, probes, security context,
  spread, resources, a termination grace that covers the server's shutdown);
- that these production manifests list the browser origins allowed through CORS
  (ALLFIVES_CORS_ORIGINS or --cors-origins), never `*`, the server's default.

    .ci/check-manifests.py RENDERED.yaml          # check, print one line per check
    .ci/check-manifests.py --self-test RENDERED.yaml  # also prove each check can fail

Needs PyYAML (installed with kubernetes-validate, which .ci/deploy-check installs).
"""

import copy
import sys

import yaml

API_SERVICE = "allfives.v1.AllFivesService"
GATEWAY_GROUP = "gateway.networking.k8s.io"
# The server's defaults (src/config.rs), used when the Deployment does not set them.
DEFAULT_SHUTDOWN_DELAY_MS = 2000
DEFAULT_DRAIN_SECONDS = 10
DEFAULT_ADDR = "[::]:50051"


class Failed(Exception):
    pass


def need(cond, what):
    if not cond:
        raise Failed(what)


def one(docs, kind):
    found = [d for d in docs if d.get("kind") == kind]
    need(len(found) == 1, f"exactly one {kind} (found {len(found)})")
    return found[0]


def nonempty_str(value):
    return isinstance(value, str) and value != ""


def port_number(value):
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535


def matches(selector, labels):
    need(
        set(selector) <= {"matchLabels"},
        f"selector uses only matchLabels: {selector}",
    )
    wanted = selector.get("matchLabels") or {}
    return bool(wanted) and all(labels.get(k) == v for k, v in wanted.items())


def env_of(container):
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def pod_parts(docs):
    deployment = one(docs, "Deployment")
    pod = deployment["spec"]["template"]
    spec = pod["spec"]
    need(len(spec["containers"]) == 1, "one container")
    return deployment, pod, spec, spec["containers"][0]


# --- Gateway API ---------------------------------------------------------------


def check_gateway(docs):
    gw = one(docs, "Gateway")
    need(gw.get("apiVersion") == f"{GATEWAY_GROUP}/v1", "Gateway is gateway.networking.k8s.io/v1")
    need(nonempty_str(gw.get("metadata", {}).get("name")), "Gateway has a name")
    spec = gw.get("spec") or {}
    need(nonempty_str(spec.get("gatewayClassName")), "Gateway spec.gatewayClassName is set")
    listeners = spec.get("listeners")
    need(isinstance(listeners, list) and 1 <= len(listeners) <= 64, "Gateway has 1-64 listeners")
    names = set()
    for ls in listeners:
        name = ls.get("name")
        need(nonempty_str(name), "every listener has a name")
        need(name not in names, f"listener names are unique ({name})")
        names.add(name)
        need(nonempty_str(ls.get("protocol")), f"listener {name} has a protocol")
        need(port_number(ls.get("port")), f"listener {name} has a port 1-65535")
        if ls["protocol"] == "HTTPS":
            tls = ls.get("tls") or {}
            need(tls.get("mode", "Terminate") == "Terminate", f"HTTPS listener {name} terminates TLS")
            refs = tls.get("certificateRefs") or []
            need(
                refs and all(nonempty_str(r.get("name")) for r in refs),
                f"HTTPS listener {name} names its certificate",
            )
    return "Gateway: gatewayClassName, listeners with name, protocol and port, TLS certificate"


def listener_admits_grpcroute(listener):
    kinds = (listener.get("allowedRoutes") or {}).get("kinds")
    if kinds is None:
        # The default for HTTP and HTTPS listeners includes GRPCRoute.
        return listener.get("protocol") in ("HTTP", "HTTPS")
    return any(k.get("kind") == "GRPCRoute" and k.get("group", GATEWAY_GROUP) == GATEWAY_GROUP for k in kinds)


def check_grpcroute(docs):
    route = one(docs, "GRPCRoute")
    need(route.get("apiVersion") == f"{GATEWAY_GROUP}/v1", "GRPCRoute is gateway.networking.k8s.io/v1")
    spec = route.get("spec") or {}
    ns = route.get("metadata", {}).get("namespace")

    parents = spec.get("parentRefs")
    need(isinstance(parents, list) and parents, "GRPCRoute has parentRefs")
    gateways = {(g["metadata"].get("namespace"), g["metadata"]["name"]): g for g in docs if g.get("kind") == "Gateway"}
    for ref in parents:
        need(nonempty_str(ref.get("name")), "every parentRef has a name")
        need(ref.get("kind", "Gateway") == "Gateway", "parentRef is a Gateway")
        need(ref.get("group", GATEWAY_GROUP) == GATEWAY_GROUP, "parentRef group is gateway.networking.k8s.io")
        gw = gateways.get((ref.get("namespace", ns), ref["name"]))
        need(gw is not None, f"parentRef {ref['name']} is a Gateway rendered here")
        listeners = gw["spec"]["listeners"]
        if "sectionName" in ref:
            listeners = [ls for ls in listeners if ls["name"] == ref["sectionName"]]
            need(listeners, f"parentRef sectionName {ref['sectionName']} is a listener of the Gateway")
        if "port" in ref:
            listeners = [ls for ls in listeners if ls["port"] == ref["port"]]
            need(listeners, f"parentRef port {ref['port']} is a listener port")
        admitting = [ls for ls in listeners if listener_admits_grpcroute(ls)]
        need(admitting, "a listener the route attaches to admits GRPCRoute")
        hostnames = spec.get("hostnames")
        if hostnames:
            need(
                any(ls.get("hostname") in (None, *hostnames) for ls in admitting),
                "the route's hostnames match its listener's hostname",
            )

    rules = spec.get("rules")
    need(isinstance(rules, list) and rules, "GRPCRoute has rules")
    services = {s["metadata"]["name"]: s for s in docs if s.get("kind") == "Service"}
    routed = False
    for rule in rules:
        for m in rule.get("matches") or []:
            method = m.get("method") or {}
            need(method.get("type", "Exact") in ("Exact", "RegularExpression"), "method match type is Exact or RegularExpression")
            need(method.get("service") or method.get("method"), "a method match names a service or a method")
            if method.get("service") == API_SERVICE and method.get("type", "Exact") == "Exact":
                routed = True
        refs = rule.get("backendRefs")
        need(isinstance(refs, list) and refs, "every rule has backendRefs")
        for ref in refs:
            need(ref.get("kind", "Service") == "Service" and ref.get("group", "") == "", "backendRef is a core Service")
            need(nonempty_str(ref.get("name")), "every backendRef has a name")
            need(port_number(ref.get("port")), f"backendRef {ref['name']} has a port (required for a Service)")
            svc = services.get(ref["name"])
            need(svc is not None, f"backendRef {ref['name']} is a Service rendered here")
            ports = {p["port"]: p for p in svc["spec"]["ports"]}
            need(ref["port"] in ports, f"backendRef port {ref['port']} is a port of Service {ref['name']}")
            need(
                ports[ref["port"]].get("appProtocol") == "kubernetes.io/h2c",
                f"Service {ref['name']} port {ref['port']} has appProtocol kubernetes.io/h2c",
            )
    need(routed, f"a rule matches method.service == {API_SERVICE} (Exact)")
    return f"GRPCRoute: parentRefs to a listener that admits it, {API_SERVICE} routed to an h2c Service port"


# --- The objects agree with each other -------------------------------------------


def check_wiring(docs):
    deployment, pod, spec, container = pod_parts(docs)
    labels = pod["metadata"]["labels"]
    need(matches(deployment["spec"]["selector"], labels), "the Deployment's selector matches its pods")
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    env = env_of(container)
    addr = env.get("ALLFIVES_ADDR", DEFAULT_ADDR)
    grpc_port = int(addr.rsplit(":", 1)[1])
    need(named.get("grpc") == grpc_port, f"container port `grpc` is ALLFIVES_ADDR's port {grpc_port}")
    if "ALLFIVES_METRICS_ADDR" in env:
        metrics_port = int(env["ALLFIVES_METRICS_ADDR"].rsplit(":", 1)[1])
        need(named.get("metrics") == metrics_port, "container port `metrics` is ALLFIVES_METRICS_ADDR's port")

    svc = one(docs, "Service")
    need(matches({"matchLabels": svc["spec"]["selector"]}, labels), "the Service selects the pods")
    for p in svc["spec"]["ports"]:
        target = p.get("targetPort", p["port"])
        need(target in named or target in named.values(), f"Service port {p['name']} targets a container port")

    pdb = one(docs, "PodDisruptionBudget")
    need(matches(pdb["spec"]["selector"], labels), "the PodDisruptionBudget selects the pods")
    hpa = one(docs, "HorizontalPodAutoscaler")
    target = hpa["spec"]["scaleTargetRef"]
    need(
        target["kind"] == "Deployment" and target["name"] == deployment["metadata"]["name"],
        "the HorizontalPodAutoscaler scales the Deployment",
    )
    need(hpa["spec"].get("minReplicas", 1) >= 2, "the HorizontalPodAutoscaler keeps 2 replicas at least")
    need(
        any(m.get("type") == "Resource" and m["resource"]["name"] == "cpu" for m in hpa["spec"]["metrics"]),
        "the HorizontalPodAutoscaler scales on CPU",
    )
    npol = one(docs, "NetworkPolicy")
    need(matches(npol["spec"]["podSelector"], labels), "the NetworkPolicy selects the pods")
    for rule in npol["spec"].get("ingress", []):
        need(rule.get("from"), "every ingress rule names its peers (none admits everyone)")
        for p in rule.get("ports", []):
            need(p["port"] in named or p["port"] in named.values(), f"NetworkPolicy port {p['port']} is a container port")

    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    secrets = {}
    for variable, literal, what in (
        ("ALLFIVES_KEYS_FILE", "ALLFIVES_KEYS", "the key ring"),
        ("ALLFIVES_RESULT_KEYS_FILE", "ALLFIVES_RESULT_KEYS", "the result keys"),
    ):
        keys_file = env.get(variable)
        need(nonempty_str(keys_file), f"{what} come from {variable}")
        need(literal not in env, f"no key material in the environment ({literal})")
        found = None
        for mount in container.get("volumeMounts", []):
            vol = volumes.get(mount["name"], {})
            if "secret" not in vol:
                continue
            for item in vol["secret"].get("items", []):
                if f"{mount['mountPath'].rstrip('/')}/{item['path']}" == keys_file:
                    need(mount.get("readOnly"), f"{what}' Secret is mounted read-only")
                    need(vol["secret"].get("optional") is not True, f"{what}' Secret is not optional")
                    found = vol["secret"].get("secretName")
        need(found, f"{variable} {keys_file} is a file of a mounted Secret")
        secrets[variable] = found
    need(
        len(set(secrets.values())) == len(secrets),
        "the result keys' Secret is not the token keys' (a verifier must not hold a token key)",
    )
    return "wiring: selectors, named ports, HPA target, token and result keys from two mounted Secrets"


# --- What the pods promise ---------------------------------------------------------


def check_pods(docs):
    deployment, pod, spec, container = pod_parts(docs)
    need(deployment["spec"].get("replicas", 1) >= 2, "the Deployment runs 2 replicas at least")
    env = env_of(container)
    grpc_port = int(env.get("ALLFIVES_ADDR", DEFAULT_ADDR).rsplit(":", 1)[1])
    for probe, service in (("readinessProbe", API_SERVICE), ("livenessProbe", None)):
        p = container.get(probe) or {}
        need("grpc" in p, f"{probe} is a native gRPC probe")
        need(p["grpc"]["port"] == grpc_port, f"{probe} checks the gRPC port")
        if service:
            need(p["grpc"].get("service") == service, f"{probe} checks {service}")

    psc = spec.get("securityContext") or {}
    csc = container.get("securityContext") or {}
    need(psc.get("runAsNonRoot") or csc.get("runAsNonRoot"), "runAsNonRoot")
    need((csc.get("runAsUser") or psc.get("runAsUser") or 0) != 0, "a non-root user id")
    need(csc.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem")
    need(csc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation false")
    need(csc.get("privileged") in (None, False), "not privileged")
    need((csc.get("capabilities") or {}).get("drop") == ["ALL"], "all capabilities dropped")
    need(not (csc.get("capabilities") or {}).get("add"), "no capability added")
    seccomp = (csc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
    need(seccomp == "RuntimeDefault", "seccomp RuntimeDefault")
    need(spec.get("automountServiceAccountToken") is False, "no service account token mounted")

    res = container.get("resources") or {}
    for part in ("requests", "limits"):
        for what in ("cpu", "memory"):
            need(what in (res.get(part) or {}), f"resources.{part}.{what} set")

    spreads = spec.get("topologySpreadConstraints") or []
    need(
        any(s["topologyKey"] == "kubernetes.io/hostname" and s["maxSkew"] == 1 for s in spreads),
        "replicas spread across nodes (kubernetes.io/hostname, maxSkew 1)",
    )

    delay_s = int(env.get("ALLFIVES_SHUTDOWN_DELAY_MS", DEFAULT_SHUTDOWN_DELAY_MS)) / 1000
    drain_s = int(env.get("ALLFIVES_DRAIN_SECONDS", DEFAULT_DRAIN_SECONDS))
    grace = spec.get("terminationGracePeriodSeconds", 30)
    need(
        grace >= delay_s + drain_s + 1,
        f"terminationGracePeriodSeconds {grace} covers the shutdown delay {delay_s:g} s + drain {drain_s} s + 1 s",
    )
    return f"pods: replicas, gRPC probes, security context, resources, spread, grace {grace} s >= {delay_s:g} + {drain_s} + 1 s"


# --- CORS: production lists its origins ----------------------------------------------


def cors_setting(container):
    """The pod's --cors-origins value (flags win over the environment, as in the
    server), and where it comes from; None when neither sets it."""
    argv = [*(container.get("command") or []), *(container.get("args") or [])]
    found = None
    for i, arg in enumerate(argv):
        if arg == "--cors-origins":
            need(i + 1 < len(argv), "--cors-origins is given a value")
            found = (argv[i + 1], "--cors-origins")
        elif isinstance(arg, str) and arg.startswith("--cors-origins="):
            found = (arg.split("=", 1)[1], "--cors-origins")
    if found:
        return found
    for e in container.get("env", []):
        if e["name"] == "ALLFIVES_CORS_ORIGINS":
            need(
                "valueFrom" not in e,
                "ALLFIVES_CORS_ORIGINS is a literal value (valueFrom cannot be checked here)",
            )
            return (e.get("value") or "", "ALLFIVES_CORS_ORIGINS")
    return None


def check_cors(docs):
    _, _, _, container = pod_parts(docs)
    setting = cors_setting(container)
    need(
        setting is not None,
        "the allowed CORS origins are listed (ALLFIVES_CORS_ORIGINS or --cors-origins;"
        " the server's default is `*`)",
    )
    value, source = setting
    # Split as the server does (src/config.rs, parse_cors_origins).
    origins = [o.strip() for o in value.split(",") if o.strip()]
    need(origins, f"{source} lists at least one origin")
    need("*" not in origins, f"{source} does not allow any origin (`*`) in production: list them")
    for origin in origins:
        scheme, sep, host = origin.partition("://")
        need(
            sep and scheme and host and "/" not in host and "*" not in origin,
            f"{source}: `{origin}` is an origin like https://app.example.com (no path, no wildcard)",
        )
    return f"CORS: {source} lists {len(origins)} origin(s), not `*`: {', '.join(origins)}"


# --- Seeds: production never takes a client's seed (docs/security.md) -------------


def check_seeds(docs):
    _, _, _, container = pod_parts(docs)
    argv = [*(container.get("command") or []), *(container.get("args") or [])]
    need(
        not any(isinstance(a, str) and a.startswith("--allow-client-seeds") for a in argv),
        "the pods do not take client seeds (--allow-client-seeds is for tests and replays)",
    )
    for e in container.get("env", []):
        need(
            e["name"] != "ALLFIVES_ALLOW_CLIENT_SEEDS",
            "the pods do not take client seeds (ALLFIVES_ALLOW_CLIENT_SEEDS is for tests and replays)",
        )
    return "seeds: the pods refuse client seeds (the server's default)"


CHECKS = [check_gateway, check_grpcroute, check_wiring, check_pods, check_cors, check_seeds]


def run(docs, quiet=False):
    for check in CHECKS:
        line = check(docs)
        if not quiet:
            print(f"ok: {line}")


# --- Self-test: each mutation must make some check fail -----------------------------


def kind(docs, k):
    return next(d for d in docs if d.get("kind") == k)


def container_of(docs):
    return kind(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]


def set_env(docs, name, value):
    c = container_of(docs)
    c["env"] = [e for e in c["env"] if e["name"] != name] + [{"name": name, "value": value}]


MUTATIONS = {
    "no gatewayClassName": lambda d: kind(d, "Gateway")["spec"].pop("gatewayClassName"),
    "listener without port": lambda d: kind(d, "Gateway")["spec"]["listeners"][0].pop("port"),
    "listener without name": lambda d: kind(d, "Gateway")["spec"]["listeners"][0].pop("name"),
    "listener without protocol": lambda d: kind(d, "Gateway")["spec"]["listeners"][0].pop("protocol"),
    "no parentRefs": lambda d: kind(d, "GRPCRoute")["spec"].pop("parentRefs"),
    "parentRef to another listener": lambda d: kind(d, "GRPCRoute")["spec"]["parentRefs"][0].update(sectionName="web"),
    "parentRef to another Gateway": lambda d: kind(d, "GRPCRoute")["spec"]["parentRefs"][0].update(name="other"),
    "another service routed": lambda d: kind(d, "GRPCRoute")["spec"]["rules"][0]["matches"][0]["method"].update(service="allfives.v2.AllFivesService"),
    "backendRef without port": lambda d: kind(d, "GRPCRoute")["spec"]["rules"][0]["backendRefs"][0].pop("port"),
    "backendRef to a wrong port": lambda d: kind(d, "GRPCRoute")["spec"]["rules"][0]["backendRefs"][0].update(port=8080),
    "Service port not h2c": lambda d: kind(d, "Service")["spec"]["ports"][0].pop("appProtocol"),
    "Service selects nothing": lambda d: kind(d, "Service")["spec"]["selector"].update({"app.kubernetes.io/name": "x"}),
    "one replica": lambda d: kind(d, "Deployment")["spec"].update(replicas=1),
    "HTTP readiness probe": lambda d: container_of(d).update(readinessProbe={"httpGet": {"port": 50051, "path": "/"}}),
    "writable root": lambda d: container_of(d)["securityContext"].update(readOnlyRootFilesystem=False),
    "capabilities kept": lambda d: container_of(d)["securityContext"].pop("capabilities"),
    "privilege escalation": lambda d: container_of(d)["securityContext"].pop("allowPrivilegeEscalation"),
    "no limits": lambda d: container_of(d)["resources"].pop("limits"),
    "short grace": lambda d: kind(d, "Deployment")["spec"]["template"]["spec"].update(terminationGracePeriodSeconds=5),
    "longer drain": lambda d: set_env(d, "ALLFIVES_DRAIN_SECONDS", "30"),
    "keys in the environment": lambda d: set_env(d, "ALLFIVES_KEYS", "1:00"),
    "key file elsewhere": lambda d: set_env(d, "ALLFIVES_KEYS_FILE", "/keys"),
    "no spread": lambda d: kind(d, "Deployment")["spec"]["template"]["spec"].pop("topologySpreadConstraints"),
    "open network policy": lambda d: kind(d, "NetworkPolicy")["spec"]["ingress"].append({"ports": [{"port": "grpc"}]}),
    "CORS allows any origin": lambda d: set_env(d, "ALLFIVES_CORS_ORIGINS", "*"),
    "CORS origins left at the default `*`": lambda d: container_of(d).update(
        env=[e for e in container_of(d)["env"] if e["name"] != "ALLFIVES_CORS_ORIGINS"]
    ),
    "CORS `*` as a flag over the listed origins": lambda d: container_of(d).update(args=["--cors-origins=*"]),
    "client seeds taken (environment)": lambda d: set_env(d, "ALLFIVES_ALLOW_CLIENT_SEEDS", "true"),
    "client seeds taken (flag)": lambda d: container_of(d).update(args=["--allow-client-seeds"]),
}


def self_test(docs):
    for name, mutate in MUTATIONS.items():
        broken = copy.deepcopy(docs)
        mutate(broken)
        try:
            run(broken, quiet=True)
        except Failed:
            continue
        raise Failed(f"self-test: the checks accepted manifests with {name}")
    print(f"ok: self-test: each of {len(MUTATIONS)} broken variants is refused")


def main(argv):
    args = [a for a in argv if a != "--self-test"]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    try:
        run(docs)
        if "--self-test" in argv:
            self_test(docs)
    except Failed as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
