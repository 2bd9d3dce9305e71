# relayq container image, built from source (needs a registry for golang:).
#   docker build -t relayq .
#   docker run -d -p 2525:2525 -p 8025:8025 -v relayq-queue:/var/lib/relayq \
#     -e RELAYQ_SUBMISSION_TRUSTED_NETWORKS=172.16.0.0/12 -e RELAYQ_ADMIN_TOKEN=... relayq
# Without a registry, `make image` builds the same image from a local static
# binary (packaging/container/Containerfile). Keep the two final stages alike.
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -buildid= -X github.com/relayq/relayq/buildinfo.version=${VERSION}" \
      -o /out/relayq ./cmd/relayq \
 && mkdir -p /out/state \
 && cp /etc/ssl/certs/ca-certificates.crt /out/

FROM scratch
COPY --from=build /out/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/relayq /usr/local/bin/relayq
COPY --from=build --chown=65532:65532 /out/state /var/lib/relayq
# Configuration by environment (see config/defaults.yaml); mount a file and
# add `--config FILE` to the command for more.
ENV RELAYQ_SUBMISSION_LISTEN=0.0.0.0:2525 \
    RELAYQ_ADMIN_LISTEN=0.0.0.0:8025 \
    RELAYQ_QUEUE_PATH=/var/lib/relayq/queue.db
USER 65532:65532
WORKDIR /var/lib/relayq
VOLUME /var/lib/relayq
EXPOSE 2525 587 465 8025
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s \
  CMD ["/usr/local/bin/relayq", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/relayq"]
CMD ["serve"]
