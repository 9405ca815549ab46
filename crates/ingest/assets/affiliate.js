// Tally affiliate module (served as-is). Commented copy: affiliate.src.js
(function(){'use strict';var w=window,n=navigator,K='tally_aff',R=/^[a-z0-9_-]{1,64}$/,s=document.currentScript,A=function(k){return s&&s.getAttribute('data-'+k)},
d=+A('days'),P=(A('param')||'ref,via').split(','),S,o,i,v,t=Date.now;if(w.tallyAffiliate)return;d=(d>0&&d<91&&d%1==0?d:30)*864e5;
try{S=A('storage')=='session'?sessionStorage:localStorage;o=localStorage.tally_ignore=='true'||A('honor-dnt')=='true'&&(n.doNotTrack=='1'||n.globalPrivacyControl===true)}catch(x){o=1}
w.tallyAffiliate=function(){try{var e=JSON.parse(S.getItem(K)),x=e.expires-t();if(!o&&typeof(v=e.slug)=='string'&&R.test(v)&&x>0&&x<=d)return v}catch(x){}
try{S.removeItem(K)}catch(x){}return null};
if(!o)try{for(i=0;i<P.length;i++)if(R.test(v=(new URLSearchParams(location.search).get(P[i].trim())||'').trim().toLowerCase())){S.setItem(K,JSON.stringify({slug:v,expires:t()+d}));break}}catch(x){}})();
