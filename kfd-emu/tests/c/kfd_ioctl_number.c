/* amdkfd answers an ioctl by its number alone (kfd_ioctl): the type byte and the direction
 * bits are its table's. AMDKFD_IOC_GET_VERSION (number 1, 8 bytes) asked with type 'Q' and
 * a write-only direction still returns the version.
 *
 * Prints "kfd_ioctl_number: <major>.<minor>" and exits 0 when the ioctl succeeded. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/ioctl.h>

int main(void) {
  int fd = open("/dev/kfd", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    perror("/dev/kfd");
    return 1;
  }
  uint32_t v[2] = {0, 0};
  if (ioctl(fd, _IOC(_IOC_WRITE, 'Q', 0x01, sizeof v), v) != 0) {
    printf("kfd_ioctl_number: %s\n", strerror(errno));
    return 1;
  }
  printf("kfd_ioctl_number: %u.%u\n", v[0], v[1]);
  return 0;
}
