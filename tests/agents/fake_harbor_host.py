"""A stand-in for Harbor's host (``gem_eval/agents/harbor/host.py``) speaking its
protocol with the standard library alone: ready at once; an episode runs its request's
``command`` in the sandbox and reports the output; ``die`` in a request ends the process
(exit 3) with a last word on stderr."""

import json
import sys


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main():
    send({"op": "ready", "protocol": 1, "harbor": "fake", "python": "3", "import_s": 0})
    calls = {}
    for line in sys.stdin:
        message = json.loads(line)
        if message["op"] == "play":
            if message.get("die"):
                sys.stderr.write("the fake host dies\n")
                sys.stderr.flush()
                sys.exit(3)
            call = len(calls) + 1
            calls[call] = message["episode"]
            send(
                {
                    "op": "exec",
                    "call": call,
                    "episode": message["episode"],
                    "command": message["command"],
                    "cwd": None,
                    "env": None,
                    "timeout_s": None,
                    "user": None,
                }
            )
        elif message["op"] == "answer":
            episode = calls.pop(message["call"])
            result = message.get("result") or {}
            send(
                {
                    "op": "done",
                    "episode": episode,
                    "error": message.get("error"),
                    "stdout": result.get("stdout"),
                    "setup_s": 0.5,
                    "run_s": 1.5,
                }
            )


main()
