/** `url` with its `application_name` set: how the bench finds a pool's server processes. */
export function withApplicationName(url: string, applicationName: string): string {
  const named = new URL(url);
  named.searchParams.set('application_name', applicationName);
  return named.toString();
}
