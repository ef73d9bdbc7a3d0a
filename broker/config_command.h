/* SPDX-License-Identifier: MIT */
/* `airlock config show`. */
#ifndef AIRLOCK_BROKER_CONFIG_COMMAND_H
#define AIRLOCK_BROKER_CONFIG_COMMAND_H

int config_command (int argc, char **argv);

#endif
