/* http.h — `loom serve`'s HTTP front (http.c, libmicrohttpd + jansson). */
#ifndef LOOM_SERVE_HTTP_H
#define LOOM_SERVE_HTTP_H

#include <signal.h>
#include <stdio.h>

#include "serve/serve.h"

/* Listens on host:port (0: a free port) and answers until one of `stop_signals` arrives
 * (blocked in every thread by the caller; taken here with sigwait); prints "listening on
 * http://HOST:PORT" to `out` once ready. Then shuts the engine down (in-flight requests end
 * cancelled) and stops the listener, waiting for its connections. */
LOOM_MUST_USE loom_status loom_serve_http_run(loom_serve_engine *e, const char *host, int port, FILE *out, const sigset_t *stop_signals);

#endif
