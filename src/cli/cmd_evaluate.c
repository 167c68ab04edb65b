/* cmd_evaluate.c - `gpuwatch evaluate`: scores the detectors against a
 * simulated cluster's ground truth (see evaluate.h). */
#include <stdio.h>

int gw_cli_evaluate(int argc, char **argv);

int gw_cli_evaluate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fputs("gpuwatch evaluate: not available in this build\n", stderr);
    return 2;
}
