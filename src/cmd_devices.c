#include "cmd.h"
int cmd_devices(int argc, char **argv) { return 1; }
