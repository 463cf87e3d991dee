/** Uniqueness claims (e.g. destination names), held in Redis so concurrent creators agree. */
export interface NameClaims {
  /**
   * Claims `name` of `kind` in the tenant for `ownerId`. Returns false when another live
   * owner holds it; `isLive(owner)` tells whether a recorded owner still exists.
   */
  claim(tenantId: string, kind: string, name: string, ownerId: string, isLive: (owner: string) => boolean): Promise<boolean>;
  release(tenantId: string, kind: string, name: string, ownerId: string): Promise<void>;
}
