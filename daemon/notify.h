/* SPDX-License-Identifier: MIT */
/* The sd_notify protocol, without libsystemd: one datagram of
 * "KEY=VALUE\n..." to the socket named by $NOTIFY_SOCKET. */
#ifndef JUSTITIAD_NOTIFY_H
#define JUSTITIAD_NOTIFY_H

/* 0 when sent or when not running under systemd, -errno on failure. */
int notify_send(const char *state);

#endif
