// The target only publishes include/CLibFuzzer.h to Swift.
#include "CLibFuzzer.h"
