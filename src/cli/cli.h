/* cli/cli.h - what the files of the gpuwatch command share: the version
 * and the subcommands main.c dispatches to. */
#ifndef GW_CLI_H
#define GW_CLI_H

#ifndef GW_VERSION
#define GW_VERSION "0.1.0"
#endif

/* Each takes the arguments after the subcommand's name and returns the
 * process exit status (0, 1 on a runtime failure, 2 on a usage error). */
int gw_cli_serve(int argc, char **argv);      /* cmd_serve.c */
int gw_cli_query(int argc, char **argv);      /* cmd_query.c */
int gw_cli_simulate(int argc, char **argv);   /* cmd_simulate.c */
int gw_cli_evaluate(int argc, char **argv);   /* cmd_evaluate.c */
int gw_cli_exclusions(int argc, char **argv); /* cmd_exclusions.c */
int gw_cli_report(int argc, char **argv);     /* cmd_report.c */
int gw_cli_compact(int argc, char **argv);    /* cmd_compact.c */
int gw_cli_verify(int argc, char **argv);     /* cmd_verify.c */
int gw_cli_backup(int argc, char **argv);     /* cmd_backup.c */
int gw_cli_restore(int argc, char **argv);    /* cmd_backup.c */
int gw_cli_export(int argc, char **argv);     /* cmd_export.c */
int gw_cli_import(int argc, char **argv);     /* cmd_import.c */
int gw_cli_downsample(int argc, char **argv); /* cmd_downsample.c */

#endif /* GW_CLI_H */
