# The hyperfleet binary (every role: serve, worker, dev, temporal, adapter).
# docker build -t ghcr.io/hyperfleet/hyperfleet:0.1.0 .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/hyperfleet/hyperfleet/internal/version.Version=${VERSION}" \
      -o /out/hyperfleet ./cmd/hyperfleet

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hyperfleet /usr/local/bin/hyperfleet
USER 65532:65532
EXPOSE 8000 9090
ENTRYPOINT ["/usr/local/bin/hyperfleet"]
