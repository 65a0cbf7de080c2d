// build_training_step: placeholder until the orchestration lands.
#include "compiler/training/training_step.h"
