#!/usr/bin/env bash
# Make a certificate authority for NATS cluster routes and one certificate per node, with
# openssl. Routes are mutual TLS (nats-server verifies both ends of a route against the CA);
# the CA signs route certificates only, never a service's client certificate, so a client
# certificate cannot open a route.
#
#   deploy/scripts/nats-route-certs.sh [--force] [--days N] OUT_DIR NODE...
#
# NODE is a node's route host name as the other nodes dial it (nats-a.internal), or an IP
# address; a NODE of the form NAME=HOST1,HOST2 names the files NAME and puts every HOST in the
# certificate (Kubernetes: nats-0=nats-0.nats,nats-0.nats.snarkflow.svc.cluster.local).
# Writes (OUT_DIR is created mode 700 if missing; keys mode 600, certificates 644):
#   OUT_DIR/route-ca.pem       the CA certificate: every node's cluster { tls { ca_file } }
#   OUT_DIR/route-ca-key.pem   the CA key: keep it off the nodes (offline), it signs new nodes
#   OUT_DIR/NAME-route.pem     NAME's certificate (server and client use: a route is both)
#   OUT_DIR/NAME-route-key.pem NAME's key
# An existing CA is reused (a node added later is signed by it); existing node files are kept
# unless --force is given. EC P-256 keys; certificates valid --days (default 825) days, the CA
# 3650. Kubernetes: put one node's pair and the CA in the Secret snarkflow-nats-route-tls
# (docs/operations.md). Needs openssl.
set -euo pipefail

usage() {
    echo "usage: $0 [--force] [--days N] OUT_DIR NODE..." >&2
    exit 2
}

force=0
days=825
args=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --force) force=1 ;;
        --days) [[ $# -ge 2 ]] || usage; days="$2"; shift ;;
        -h | --help) usage ;;
        -*) echo "unknown option: $1" >&2; usage ;;
        *) args+=("$1") ;;
    esac
    shift
done
[[ ${#args[@]} -ge 2 ]] || usage
[[ "$days" =~ ^[0-9]+$ ]] || { echo "--days takes a number" >&2; exit 2; }
out="${args[0]}"
nodes=("${args[@]:1}")
command -v openssl >/dev/null || { echo "openssl is missing" >&2; exit 1; }

umask 077
mkdir -p -- "$out"
work="$(mktemp -d)"
trap 'rm -rf -- "$work"' EXIT

ca="$out/route-ca.pem" ca_key="$out/route-ca-key.pem"
if [[ ! -e "$ca" || ! -e "$ca_key" ]]; then
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/ca-key.pem" 2>/dev/null
    openssl req -x509 -new -key "$work/ca-key.pem" -sha256 -days 3650 -subj "/O=snarkflow/CN=snarkflow NATS route CA" \
        -addext "basicConstraints=critical,CA:TRUE,pathlen:0" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -out "$work/ca.pem"
    install -m 600 "$work/ca-key.pem" "$ca_key"
    install -m 644 "$work/ca.pem" "$ca"
    echo "made the route CA: $ca (its key $ca_key: keep it offline)"
fi

for node in "${nodes[@]}"; do
    if [[ "$node" == *=* ]]; then
        name="${node%%=*}" hosts="${node#*=}"
    else
        name="$node" hosts="$node"
    fi
    [[ "$name" =~ ^[A-Za-z0-9._-]+$ ]] || { echo "not a file name: $name" >&2; exit 2; }
    cert="$out/$name-route.pem" key="$out/$name-route-key.pem"
    if [[ $force -eq 0 && ( -e "$cert" || -e "$key" ) ]]; then
        echo "kept $cert (use --force to replace it)"
        continue
    fi
    san=""
    IFS=',' read -r -a host_list <<<"$hosts"
    for host in "${host_list[@]}"; do
        if [[ "$host" =~ ^[0-9.]+$ || "$host" == *:* ]]; then
            san+="${san:+,}IP:$host"
        else
            san+="${san:+,}DNS:$host"
        fi
    done
    cat >"$work/ext.cnf" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=$san
EOF
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$work/key.pem" 2>/dev/null
    openssl req -new -key "$work/key.pem" -subj "/O=snarkflow/CN=$name" -out "$work/req.csr"
    openssl x509 -req -in "$work/req.csr" -CA "$ca" -CAkey "$ca_key" -CAcreateserial -CAserial "$work/ca.srl" \
        -sha256 -days "$days" -extfile "$work/ext.cnf" -out "$work/cert.pem" 2>/dev/null
    openssl verify -CAfile "$ca" "$work/cert.pem" >/dev/null
    install -m 600 "$work/key.pem" "$key"
    install -m 644 "$work/cert.pem" "$cert"
    echo "wrote $cert and $key ($san)"
done
