# The pitcrew image: `pitcrew serve`, local builds, and the release's images (the GitHub Action runs
# the released `runtime-prebuilt` image that action.yml names; see .github/workflows/release.yml).
#
# Stages:
#   base              Debian slim with git, ca-certificates, openssh-client, tini, a shell and the
#                     sandbox's unprivileged user `pitcrew-sandbox` (uid/gid 65532); no binary yet.
#   runtime-prebuilt  base + a binary built outside Docker (build arg PITCREW_BINARY, a path in the
#                     build context), for machines without the Rust image:
#                       mkdir ctx && cp target/release/pitcrew ctx/
#                       docker build -f Dockerfile --target runtime-prebuilt -t pitcrew ctx
#   builder           the release binary, built from this repository (`cargo build --release --locked`).
#   static            the release's static binary alone (musl; from static-builder), for
#                       docker buildx build --target static --output type=local,dest=out .
#   runtime           base + the builder's binary: the `pitcrew serve` image
#                       docker build --target runtime -t pitcrew .
#   action            runtime, the default target: for an Action built from source (`image: Dockerfile`).
#
# pitcrew runs as root, and the commands it runs for a job never do. It holds the Docker socket (which
# is root on the host whatever user holds it), and only root can hand a job's working copy to the
# sandbox's own user and take it back: the Docker sandbox's containers and the local backend's
# commands run as `pitcrew-sandbox` (65532), which can read neither the data directory (0700, root's)
# nor the App's key. Run as another user, pitcrew's sandboxes would run as that same user.
#
# runtime-prebuilt sits before builder so that even Docker's legacy builder, which builds every stage
# up to the target in file order, makes it without the Rust image; BuildKit (GitHub's runners, any
# current Docker) builds only the stages the target needs.

ARG DEBIAN_IMAGE=debian:bookworm-slim
ARG RUST_IMAGE=rust:1.88-slim-bookworm
ARG RUST_ALPINE_IMAGE=rust:1.88-alpine

FROM ${DEBIAN_IMAGE} AS base
# git (the CLI, for the agent's and the test runners' own use; pitcrew itself links libgit2),
# ca-certificates for https, libssl3 which the binary links, openssh-client for ssh remotes, tini
# as PID 1: it reaps the orphans of the commands pitcrew runs and forwards signals, so SIGTERM reaches
# pitcrew's graceful shutdown.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates git libssl3 openssh-client tini \
    && rm -rf /var/lib/apt/lists/*
RUN groupadd --gid 65532 pitcrew-sandbox \
    && useradd --uid 65532 --gid pitcrew-sandbox --no-create-home --home-dir /nonexistent \
        --shell /usr/sbin/nologin pitcrew-sandbox \
    && install -d -m 0700 /var/lib/pitcrew
# On GitHub the checkout (/github/workspace) belongs to the runner's user, not to whoever runs in the
# container; without this, git and libgit2 refuse it as "dubious ownership". The container is a
# single-purpose sandbox of its own, so every directory is trusted.
RUN git config --system --add safe.directory '*'
# `pitcrew serve` keeps its data in ./pitcrew-data: a volume at /var/lib/pitcrew/pitcrew-data keeps it.
WORKDIR /var/lib/pitcrew
# `[server] listen` defaults to 127.0.0.1:8080, which nothing outside the container can reach (a
# published port or a proxy on the container network connects to the container's own address), so
# the image listens on every interface. The environment beats the config file: to listen elsewhere,
# pass `-e PITCREW_SERVER_LISTEN=...` or `serve --listen`; for `listen` in a mounted pitcrew.toml to
# count, pass `-e PITCREW_SERVER_LISTEN=` (an empty variable counts as unset).
# `pitcrew action` and `pitcrew run` open no port and ignore the setting.
ENV PITCREW_SERVER_LISTEN=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/usr/bin/tini", "--", "pitcrew"]
CMD ["--help"]

FROM base AS runtime-prebuilt
ARG PITCREW_BINARY=pitcrew
COPY ${PITCREW_BINARY} /usr/local/bin/pitcrew

FROM ${RUST_IMAGE} AS builder
# git2's https transport links the system OpenSSL (libgit2-sys → openssl-sys).
RUN apt-get update \
    && apt-get install -y --no-install-recommends libssl-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The whole workspace: `tests` is a member and `prompts` is embedded at build time (.dockerignore
# keeps target/, .git/ and the docs out).
COPY . .
RUN cargo build --release --locked -p pitcrew \
    && install -m 0755 target/release/pitcrew /usr/local/bin/pitcrew

# The release's static binary (.github/workflows/release.yml): musl with OpenSSL and zlib linked in,
# built on the runner's own architecture and exported with
#   docker buildx build --target static --output type=local,dest=out .
# (out/pitcrew). Nothing here builds it on the way to another target.
FROM ${RUST_ALPINE_IMAGE} AS static-builder
RUN apk add --no-cache musl-dev openssl-dev openssl-libs-static zlib-dev zlib-static pkgconf perl make
WORKDIR /src
COPY . .
ENV OPENSSL_STATIC=1
RUN cargo build --release --locked -p pitcrew \
    && install -m 0755 target/release/pitcrew /pitcrew \
    && if ldd /pitcrew 2>/dev/null | grep -q '=>'; then echo "pitcrew is linked dynamically" >&2; exit 1; fi

FROM scratch AS static
COPY --from=static-builder /pitcrew /pitcrew

FROM base AS runtime
COPY --from=builder /usr/local/bin/pitcrew /usr/local/bin/pitcrew

# GitHub runs a Docker action as the image's user with the runner's checkout mounted at
# /github/workspace and its output files under /github/file_commands, all owned by the runner's
# user: only root can write there (GitHub's documentation says not to set a non-root USER).
FROM runtime AS action
