"""``python -m relay_kernel -f CONNECTION_FILE`` starts the kernel;
``python -m relay_kernel install [--user|--sys-prefix|--prefix P]`` installs the kernelspec."""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "install":
        from relay_kernel.install import main as install_main

        install_main(sys.argv[2:])
        return
    from ipykernel.kernelapp import IPKernelApp

    from relay_kernel.kernel import RelayKernel

    IPKernelApp.launch_instance(kernel_class=RelayKernel)


if __name__ == "__main__":
    main()
