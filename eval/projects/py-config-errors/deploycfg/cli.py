"""`deploycfg check FILE`: validates a deployment file."""

import argparse
import sys

from .config import ConfigError, load_config


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="deploycfg")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="validate a deployment file")
    check.add_argument("file")
    args = parser.parse_args(argv)

    try:
        config = load_config(args.file)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"ok: {config.host}:{config.port} ({config.retries} retries, timeout {config.timeout}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
