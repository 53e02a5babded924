#!/bin/bash
# Step 17 of `make demo`: the model in a registry. Starts a local OCI registry (bin/registry,
# distribution v3, from `make emulators`) on a free loopback port with filesystem storage under
# DIR, pushes the sample model's DR manifest and every file to it (`lifeboat manifest push`),
# generates a demo key pair under DIR, signs the manifest in the registry (`manifest sign`: an OCI
# referrer, through the sha256-<digest> tag fallback since distribution has no referrers API),
# verifies the signature (`manifest verify-sig`, and a stranger's key refused), then boots from the
# registry replica with a fleet whose `trust:` requires that signature, ending WARM.
#
# The registry is stopped when this script exits, however it exits, unless KEEP is set (make demo
# KEEP=1): then it stays up, its pid in DIR/registry.pid for `make demo-stop`, and DIR/registry.env
# names it. Without bin/registry the step says so and is skipped, like the demo's other optional
# parts. The registry runs without auth: it listens on 127.0.0.1 only and holds demo bytes.
#
# usage: demo-registry.sh LIFEBOAT REGISTRY_BIN MANIFEST BUNDLE_DIR DIR
set -euo pipefail
lifeboat=$1 registry=$2 manifest=$3 bundle=$4 dir=$5

if [ ! -x "$registry" ]; then
	echo "the OCI registry is not installed ($registry; make emulators installs it): skipped"
	exit 0
fi
rm -rf "$dir" && mkdir -p "$dir/storage"

# A free loopback port: nothing answers on it now. A port taken between the probe and the
# registry's listen makes the registry exit, and the next port is tried.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
started=
for attempt in 1 2 3 4 5; do
	port=$((20000 + RANDOM % 40000))
	port_free "$port" || continue
	cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: "$dir/storage"
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
EOF
	# OTEL_*: distribution v3 would otherwise try to export traces to localhost:4318.
	OTEL_TRACES_EXPORTER=none OTEL_SDK_DISABLED=true "$registry" serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/registry.pid"
	for _ in $(seq 150); do
		curl -fsS -o /dev/null "http://127.0.0.1:$port/v2/" 2>/dev/null && { started=1; break; }
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	[ -n "$started" ] && break
	kill "$pid" 2>/dev/null || true
done
if [ -z "$started" ]; then
	echo "the local registry did not start:"; tail -20 "$dir/registry.log" || true
	exit 1
fi
if [ -z "${KEEP:-}" ]; then
	trap 'kill $(cat "$dir/registry.pid") 2>/dev/null; echo "the demo registry is stopped"' EXIT
fi
host=127.0.0.1:$port
ref=oci://$host/demo/llama-demo:v1
echo "REGISTRY=$host" >"$dir/registry.env"
echo "REF=$ref" >>"$dir/registry.env"
echo "a local OCI registry (distribution) on $host, storage in $dir/storage"

run() { echo "\$ ${*/#$lifeboat/lifeboat}"; "$@"; }
run "$lifeboat" manifest push "$manifest" --from "$bundle" "$ref"
echo "-- a demo signing key (ECDSA P-256, PKCS#8 PEM) in $dir"
run openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/demo.key"
run openssl pkey -in "$dir/demo.key" -pubout -out "$dir/demo.pub"
run "$lifeboat" manifest sign "$ref" --key "$dir/demo.key"
run "$lifeboat" manifest verify-sig "$ref" --key "$dir/demo.pub"
echo "-- a key that did not sign it is refused (expect exit 1)"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/stranger.key" 2>/dev/null
openssl pkey -in "$dir/stranger.key" -pubout -out "$dir/stranger.pub"
rc=0; run "$lifeboat" manifest verify-sig "$ref" --key "$dir/stranger.pub" || rc=$?
echo "verify-sig exit code: $rc (1 = no accepted signature)"; [ "$rc" -eq 1 ]

echo "-- boot from the registry replica; the fleet's trust: requires the demo key's signature"
cat >"$dir/fleet.yaml" <<EOF
model: {name: llama-demo, manifest: "$ref"}
trust:
  keys: [demo.pub]
regions:
  us-east-1:
    replica: "$ref"
    launcher: {kind: exec, command: "lifeboat engine-sim {{.ModelDir}} --config {{.EngineConfig}} --port {{.Port}}"}
EOF
run "$lifeboat" boot --fleet "$dir/fleet.yaml" --region us-east-1 --workdir "$dir/boot"
if [ -n "${KEEP:-}" ]; then
	echo "the demo registry stays up (KEEP=1) on $host: . $dir/registry.env; oras repo tags \$REGISTRY/demo/llama-demo --plain-http"
fi
