# One image for both binaries, skewbench and remote-effect, built in two stages:
#   build    compiles a lean Release build (no tests, no benchmarks) and works out
#            which Debian packages own the shared libraries the binaries load;
#   runtime  a slim Debian with exactly those packages, the binaries and the scenarios.
#
# docker-compose.yml builds this file; by hand:
#   docker build --build-arg SKEWBENCH_GIT_COMMIT="$(git rev-parse HEAD)" -t skewbench .
# The build context carries no .git (see .dockerignore), so the commit the
# evidence records comes from that build argument; without it, "unknown".

ARG DEBIAN_IMAGE=debian:trixie-slim

FROM ${DEBIAN_IMAGE} AS build
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      libpqxx-dev libpq-dev libsqlite3-dev nlohmann-json3-dev libcpp-httplib-dev \
      libcli11-dev libssl-dev libvalijson-dev libtinyxml2-dev libmimalloc-dev librapidcheck-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake/ cmake/
COPY harness/ harness/
# The evidence schemas are compiled into skewbench (for `skewbench verify`),
# and so are the bounds of `skewbench explore --target` without a bounds file.
COPY schemas/ schemas/
COPY scenarios/explore/target.json scenarios/explore/target.json
ARG SKEWBENCH_GIT_COMMIT=unknown
ENV SKEWBENCH_GIT_COMMIT=${SKEWBENCH_GIT_COMMIT}
RUN cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
      -DSKEWBENCH_BUILD_TESTS=OFF -DSKEWBENCH_BUILD_BENCH=OFF \
 && cmake --build build --parallel "$(nproc)"

# The runtime packages are whatever owns the libraries ldd resolves, asked of
# dpkg rather than written down here, so a library soname bump in Debian
# (libpqxx-7.x, libcpp-httplib0.x, libssl3t64) cannot leave the image stale.
# dpkg may record a library under /usr/lib or, before the /usr merge finished,
# under /lib; both spellings are tried. libfaketime joins them: --clock-mode
# real preloads it into the services skewbench starts (docs/real-clocks.md).
RUN ldd build/bin/skewbench build/bin/remote-effect \
    | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u \
    | while read -r lib; do \
        real=$(readlink -f "$lib"); \
        owner=$(dpkg-query -S "$real" 2>/dev/null || dpkg-query -S "${real#/usr}" 2>/dev/null) \
          || { echo "no Debian package owns $real" >&2; exit 1; }; \
        echo "${owner%%:*}"; \
      done \
    | sort -u > /runtime-packages.txt \
 && echo libfaketime >> /runtime-packages.txt \
 && echo "runtime packages:" $(cat /runtime-packages.txt)


FROM ${DEBIAN_IMAGE} AS runtime
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
COPY --from=build /runtime-packages.txt /opt/skewbench/runtime-packages.txt
RUN apt-get update \
 && xargs --arg-file=/opt/skewbench/runtime-packages.txt \
      env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/*

COPY --from=build /src/build/bin/skewbench /src/build/bin/remote-effect /usr/local/bin/
# The clock library for a target's store that libfaketime cannot start (no
# target ships in the image: for one given to `run --target --targets-dir`),
# where skewbench looks for it beside its own folder.
COPY --from=build /src/build/bin/libskewbench-wallclock.so /usr/local/lib/skewbench/
# Fails the build when a library is missing, instead of at the first run.
RUN if ldd /usr/local/bin/skewbench /usr/local/bin/remote-effect | grep 'not found'; then exit 1; fi \
 && skewbench --version && remote-effect --version

COPY scenarios/ /opt/skewbench/scenarios/

# remote-effect keeps its SQLite state in /data (a named volume in compose,
# which takes this directory's owner when first created).
RUN useradd --system --uid 10001 --home-dir /nonexistent --shell /usr/sbin/nologin skewbench \
 && mkdir -p /data /results \
 && chown skewbench:skewbench /data
USER skewbench
WORKDIR /opt/skewbench
ENV STATE_DB=/data/remote-effect.sqlite3
EXPOSE 8080
CMD ["skewbench", "--help"]
