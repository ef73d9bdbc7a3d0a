/* SPDX-License-Identifier: MIT */
/* `airlock run`: one command in a fresh local sandbox. */
#ifndef AIRLOCK_BROKER_RUN_COMMAND_H
#define AIRLOCK_BROKER_RUN_COMMAND_H

/* argv[0] is "run".  Returns the exit status for airlock. */
int run_command (int argc, char **argv);

#endif
