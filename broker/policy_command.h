/* SPDX-License-Identifier: MIT */
/* `airlock policy check|rules|test`. */
#ifndef AIRLOCK_BROKER_POLICY_COMMAND_H
#define AIRLOCK_BROKER_POLICY_COMMAND_H

int policy_command (int argc, char **argv);

#endif
