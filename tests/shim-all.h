/* SPDX-License-Identifier: MIT */
/* Every module of the shim but preload.c (the interposer) and api.c, as one
 * translation unit: tests and benches that drive the shim's internals
 * against a fake provider include this once.  A new shim module goes here. */
#include "../shim/log.c"
#include "../shim/stats.c"
#include "../shim/registry.c"
#include "../shim/ops.c"
#include "../shim/qpex.c"
#include "../shim/client.c"
#include "../shim/pace.c"
#include "../shim/inject.c"
#include "../shim/cqex.c"
#include "../shim/split.c"
#include "../shim/splitmsg.c"
#include "../shim/classify.c"
#include "../shim/wrbuf.c"
#include "../shim/window.c"
#include "../shim/sq.c"
#include "../common/proto.c"
#include "../common/proto_client.c"
