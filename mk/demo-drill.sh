#!/bin/bash
# Step 16 of `make demo`: the drill. Writes the sample fleet of three regions whose replicas are the
# demo's clouds (CLOUD_S3, CLOUD_GCS, CLOUD_AZURE and their credentials from CLOUDS_ENV), then runs
# `lifeboat drill run` and `lifeboat drill history`.
#
# The router is a real HAProxy when $HAPROXY names one (the Makefile finds it; `make demo HAPROXY=`
# forces the file router): one backend per class at the baseline weights of weights.json, servers
# named by region pointing at the ports the drill's candidates will listen on (launcher.port, free
# ports from democlouds: DEMO_PORTS), one frontend per class that the drill's synthetic traffic goes
# through, X-Served-By naming the server. HAProxy is stopped when this script exits, however it
# exits. Without it, the file router (weights.json): its data plane is the receivers' endpoints.
#
# usage: demo-drill.sh LIFEBOAT DIR CLOUDS_ENV   (DIR holds drill.yaml and weights.json; the report
# goes to DIR/report)
set -euo pipefail
lifeboat=$1 dir=$2
# shellcheck disable=SC1090
. "$3"
read -r p_use1 p_euw1 p_euc1 p_fe_eu p_fe_global <<<"${DEMO_PORTS:?clouds.env has no DEMO_PORTS}"

launcher() { echo "launcher: {kind: exec, command: \"lifeboat engine-sim {{.ModelDir}} --config {{.EngineConfig}} --port {{.Port}}\", port: $1}"; }
cap='capacity: {replicas: 4, prefill_tokens_per_s: 8000}'
if [ -n "${HAPROXY:-}" ]; then
	router="router: {driver: haproxy, socket: admin.sock, backends: {eu-only: be_eu, global: be_global}, frontends: {eu-only: \"http://127.0.0.1:$p_fe_eu\", global: \"http://127.0.0.1:$p_fe_global\"}}"
	# the baseline of weights.json, as HAProxy's configured weights
	cat >"$dir/haproxy.cfg" <<EOF
global
  stats socket $dir/admin.sock mode 600 level admin
  nbthread 1

defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s

frontend fe_eu
  bind 127.0.0.1:$p_fe_eu
  default_backend be_eu

frontend fe_global
  bind 127.0.0.1:$p_fe_global
  default_backend be_global

backend be_eu
  balance roundrobin
  http-response set-header X-Served-By %[srv_name]
  server eu-west-1 127.0.0.1:$p_euw1 weight 50
  server eu-central-1 127.0.0.1:$p_euc1 weight 50

backend be_global
  balance roundrobin
  http-response set-header X-Served-By %[srv_name]
  server us-east-1 127.0.0.1:$p_use1 weight 50
  server eu-west-1 127.0.0.1:$p_euw1 weight 30
  server eu-central-1 127.0.0.1:$p_euc1 weight 20
EOF
	"$HAPROXY" -D -p "$dir/haproxy.pid" -f "$dir/haproxy.cfg"
	trap 'kill "$(cat "$dir/haproxy.pid")" 2>/dev/null || true' EXIT
	for _ in $(seq 100); do [ -S "$dir/admin.sock" ] && break; sleep 0.1; done
	echo "router: HAProxy $("$HAPROXY" -v | head -1 | cut -d' ' -f3) (Runtime API $dir/admin.sock; frontends :$p_fe_eu eu-only, :$p_fe_global global)"
else
	router='router: {driver: file, path: weights.json}'
	echo "router: the file router ($dir/weights.json; HAProxy not installed, or HAPROXY= given)"
fi
cat >"$dir/fleet.yaml" <<EOF
model: {name: llama-demo, manifest: ../manifest.json}
regions:
  us-east-1:    {geo: us, replica: "$CLOUD_S3", $cap, $(launcher "$p_use1")}
  eu-west-1:    {geo: eu, replica: "$CLOUD_AZURE", $cap, $(launcher "$p_euw1")}
  eu-central-1: {geo: eu, replica: "$CLOUD_GCS", $cap, $(launcher "$p_euc1")}
tenants: {eu-only: [eu-west-1, eu-central-1], global: [us-east-1, eu-west-1, eu-central-1]}
$router
failover: {step_percent: 25, step_interval: 300ms, spill_cap_percent: 60, drain_timeout: 2s, failback_dwell: 1s, max_transitions_per_hour: 100, assumed_utilization_percent: 20}
state: ./state
EOF
echo "$lifeboat drill run $dir/drill.yaml --report $dir/report --approve-all"
"$lifeboat" drill run "$dir/drill.yaml" --report "$dir/report" --approve-all
echo "$lifeboat drill history --fleet $dir/fleet.yaml"
"$lifeboat" drill history --fleet "$dir/fleet.yaml"
