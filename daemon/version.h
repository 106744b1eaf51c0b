/* SPDX-License-Identifier: MIT */
/* The daemon's version, for justitiad -V and the control socket's replies. */
#ifndef JUSTITIAD_VERSION_H
#define JUSTITIAD_VERSION_H

#define JUSTITIA_VERSION "0.1.0"

#endif
