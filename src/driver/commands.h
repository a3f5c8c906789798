/* commands.h — declarations of every `loom` subcommand, from commands.def. */
#ifndef LOOM_DRIVER_COMMANDS_H
#define LOOM_DRIVER_COMMANDS_H

#include "driver/cli.h"

#define LOOM_COMMAND(ident) extern const loom_cli_command loom_cmd_##ident;
#include "driver/commands.def"
#undef LOOM_COMMAND

#endif
