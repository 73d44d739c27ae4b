// The declaration in include/CFuzzDriver.h is all this target provides; libFuzzer defines the function.
#include "CFuzzDriver.h"
