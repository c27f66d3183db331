# syntax=docker/dockerfile:1
# The waldur-gitops image, for sites that build with Docker (BuildKit).
# `make image` builds the same image without a Docker daemon (containerimage/);
# containerimage/dockerfile_test.go fails when the two drift apart. See docs/image.md.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg REVISION=$(git rev-parse HEAD) -t ghcr.io/waldur/waldur-gitops:TAG .

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=dev
ARG REVISION=
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X github.com/waldur/waldur-gitops/internal/version.Version=${VERSION} -X github.com/waldur/waldur-gitops/internal/version.Commit=${REVISION}" \
      -o /out/waldur-gitops ./cmd/waldur-gitops
# Directories the final stage copies in: scratch has no shell to make them.
# The home directory is staged apart from /rootfs so that the final stage
# creates it with its COPY --chown (a directory that exists already would keep
# root as its owner, and the user could not enter its working directory).
RUN mkdir -p /rootfs/tmp /rootfs/root /rootfs/home /homeroot/home/nonroot \
 && chmod 1777 /rootfs/tmp && chmod 0700 /rootfs/root /homeroot/home/nonroot \
 && chown 65532:65532 /homeroot/home/nonroot

FROM scratch
ARG VERSION=dev
COPY --from=build /rootfs/ /
# COPY keeps the modes set above (/tmp 1777); the home directory belongs to the user.
COPY --from=build --chown=65532:65532 /homeroot/home/nonroot /home/nonroot
COPY containerimage/rootfs/etc/passwd /etc/passwd
COPY containerimage/rootfs/etc/group /etc/group
# Debian's bundle from the build stage; make image writes the x509roots/fallback roots instead.
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/waldur-gitops /usr/local/bin/waldur-gitops
ENV PATH=/usr/local/bin HOME=/home/nonroot
USER 65532:65532
WORKDIR /home/nonroot
LABEL org.opencontainers.image.title="waldur-gitops" \
      org.opencontainers.image.source="https://github.com/waldur/waldur-gitops" \
      org.opencontainers.image.version="${VERSION}"
ENTRYPOINT ["/usr/local/bin/waldur-gitops"]
CMD ["--help"]
