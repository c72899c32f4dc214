# The pitcrew image: the GitHub Action (action.yml builds this file's last stage) and `pitcrew serve`.
#
# Stages:
#   base              Debian slim with git, ca-certificates, openssh-client, tini, a shell and the
#                     non-root user `pitcrew` (uid 10001); no binary yet.
#   runtime-prebuilt  base + a binary built outside Docker (build arg PITCREW_BINARY, a path in the
#                     build context), for machines without the Rust image:
#                       mkdir ctx && cp target/release/pitcrew ctx/
#                       docker build -f Dockerfile --target runtime-prebuilt -t pitcrew ctx
#   builder           the release binary, built from this repository (`cargo build --release --locked`).
#   runtime           base + the builder's binary, running as `pitcrew`: the `pitcrew serve` image
#                       docker build --target runtime -t pitcrew .
#   action            runtime, running as root: what a GitHub Action step runs (the default target).
#
# runtime-prebuilt sits before builder so that even Docker's legacy builder, which builds every stage
# up to the target in file order, makes it without the Rust image; BuildKit (GitHub's runners, any
# current Docker) builds only the stages the target needs.

ARG DEBIAN_IMAGE=debian:bookworm-slim
ARG RUST_IMAGE=rust:1.88-slim-bookworm

FROM ${DEBIAN_IMAGE} AS base
# git (the CLI, for the agent's and the test runners' own use; pitcrew itself links libgit2),
# ca-certificates for https, libssl3 which the binary links, openssh-client for ssh remotes, tini
# as PID 1: it reaps the orphans of the commands pitcrew runs and forwards signals, so SIGTERM reaches
# pitcrew's graceful shutdown.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates git libssl3 openssh-client tini \
    && rm -rf /var/lib/apt/lists/*
RUN groupadd --gid 10001 pitcrew \
    && useradd --uid 10001 --gid pitcrew --home-dir /home/pitcrew --create-home --shell /bin/bash pitcrew \
    && install -d -o pitcrew -g pitcrew /var/lib/pitcrew
# On GitHub the checkout (/github/workspace) belongs to the runner's user, not to whoever runs in the
# container; without this, git and libgit2 refuse it as "dubious ownership". The container is a
# single-purpose sandbox of its own, so every directory is trusted.
RUN git config --system --add safe.directory '*'
# `pitcrew serve` keeps its data in ./pitcrew-data: a volume at /var/lib/pitcrew/pitcrew-data keeps it.
WORKDIR /var/lib/pitcrew
EXPOSE 8080
ENTRYPOINT ["/usr/bin/tini", "--", "pitcrew"]
CMD ["--help"]

FROM base AS runtime-prebuilt
ARG PITCREW_BINARY=pitcrew
COPY ${PITCREW_BINARY} /usr/local/bin/pitcrew
USER pitcrew

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

FROM base AS runtime
COPY --from=builder /usr/local/bin/pitcrew /usr/local/bin/pitcrew
USER pitcrew

# GitHub runs a Docker action as the image's user with the runner's checkout mounted at
# /github/workspace and its output files under /github/file_commands, all owned by the runner's
# user: only root can write there (GitHub's documentation says not to set a non-root USER). So the
# default target runs as root; `pitcrew serve` uses the `runtime` target, or this image with
# `--user pitcrew`.
FROM runtime AS action
USER root
